// What a scheduler is to the HTTP server: the generations it is asked for, the events each sends back, its options
// and observer, and the ServeScheduler surface both the in-process Scheduler and the engine worker's one implement.
import type { ApiError } from "../errors.js";
import type { SequenceOptions, TokenLogprob } from "./engine.js";
import type { Scheduler } from "./scheduler.js";

/** Why a generation ended, in OpenAI's words. */
export type FinishReason = "stop" | "length";

/** What one generation asks for (one choice of a request). */
export interface GenerationRequest extends SequenceOptions {
  /** Prompt token ids (non-empty; prompt + maxTokens fit the context, checked by the caller). */
  readonly prompt: readonly number[];
}

/** A sampled token with the text it released (possibly empty) and, when asked, its logprobs. */
export interface TokenEvent {
  readonly kind: "token";
  readonly id: number;
  readonly text: string;
  readonly logprob: number | null;
  readonly top: readonly TokenLogprob[] | null;
}

/** The end of a generation: trailing text, the reason and the token counts. */
export interface DoneEvent {
  readonly kind: "done";
  readonly text: string;
  readonly finishReason: FinishReason;
  readonly promptTokens: number;
  readonly completionTokens: number;
}

/** The failure of a generation (an engine error), reported to its client only. */
export interface ErrorEvent {
  readonly kind: "error";
  readonly error: ApiError;
}

/** Events of one generation, in order: tokens, then one done or error. */
export type GenerationEvent = TokenEvent | DoneEvent | ErrorEvent;

/** Where the scheduler reports timings and counts (the /metrics registry). */
export interface SchedulerObserver {
  /** Seconds from submission to the first token. */
  firstToken(seconds: number): void;
  /** Seconds between consecutive tokens of one sequence. */
  interToken(seconds: number): void;
  /** A generation finished with these counts. */
  finished(promptTokens: number, completionTokens: number, reason: FinishReason | "cancelled" | "error"): void;
  /** Seconds a generation waited in the queue before it joined the batch. */
  queued?(seconds: number): void;
  /** Seconds from a generation's submission to its end (done, cancelled or failed). */
  ended?(seconds: number): void;
}

/** Options of {@link Scheduler}. */
export interface SchedulerOptions {
  /** Most sequences in one decode step. */
  readonly maxBatch: number;
  /** Most requests waiting for a slot; past it submissions get a 429. */
  readonly maxQueue: number;
  /** Most milliseconds a generation may wait for a slot before it fails with a 503 (default: no limit). */
  readonly queueTimeoutMs?: number;
  /** Receives timings and counts. */
  readonly observer?: SchedulerObserver;
  /** Receives admissions and events synchronously instead of the jobs' channels (the engine worker's batching). */
  readonly sink?: JobSink;
}

/** A submitted generation: its events, and cancel() for a client that went away. */
export interface GenerationJob {
  /** Events as they happen; ends after the done or error event. */
  readonly events: AsyncIterable<GenerationEvent>;
  /** Stops the generation and frees its sequence (no more events); idempotent. */
  cancel(): void;
}

/**
 * Where a scheduler's jobs report, synchronously, instead of their `events` channels: the engine worker
 * (engine-worker-main.ts) batches what one step released into one message to the HTTP thread.
 */
export interface JobSink {
  /** A job left the queue for the running batch (its KV pages are reserved). */
  admitted(job: GenerationJob): void;
  /** An event of a job, in order; its done or error event is its last. */
  event(job: GenerationJob, event: GenerationEvent): void;
}

/**
 * What the HTTP server needs from a scheduler: submission with truthful admission answers, the queue and batch
 * figures /health and /metrics report, draining and shutdown. {@link Scheduler} runs the engine on the calling
 * thread; the engine worker's scheduler (remote-scheduler.ts) runs it on a worker thread behind the same surface.
 */
export interface ServeScheduler {
  /** Requests waiting for a slot. */
  readonly queueDepth: number;
  /** Sequences in the running batch. */
  readonly activeSequences: number;
  /** Tokens held in the active sequences' KV caches. */
  readonly kvTokens: number;
  /** Engine steps run so far. */
  readonly stepCount: number;
  /** Whether new work is refused (draining, shut down or failed). */
  readonly draining: boolean;
  /** Why no new work is taken: null while serving. /health answers 503 with it. */
  readonly refusing: "draining" | "failed" | null;
  /** Seconds until the queue has room for `count` more (Retry-After). */
  retryAfterSeconds(count: number): number;
  /**
   * Queues generations (the choices of one request) together: all are admitted to the queue or none is.
   * @throws ApiError 400 when the request could never run, 429 when the queue is full, 503 while shutting down.
   */
  submit(requests: readonly GenerationRequest[]): GenerationJob[];
  /** Refuses new work and resolves once everything queued and running ended (true) or after `timeoutMs` (false). */
  drain(timeoutMs: number): Promise<boolean>;
  /** Refuses new work and cancels everything queued or running. */
  shutdown(): void;
}

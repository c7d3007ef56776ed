// Continuous batching: one loop runs every active sequence as one engine step, samples each one's next
// token, and between steps lets finished or cancelled requests leave and waiting ones join (up to maxBatch,
// and only when the KV pages they can grow to are free: admission control, first come first served).
import { ApiError, invariant } from "../errors.js";
import { Channel } from "./channel.js";
import type { BatchEngine, EngineSequence, SequenceOptions, TokenLogprob } from "./engine.js";

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
 * thread; the engine worker's scheduler (engine-worker.ts) runs it on a worker thread behind the same surface.
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

/** Generations that left a scheduler recently: the measured drain rate behind Retry-After. */
export class DrainRate {
  /** When recent generations left (ms, performance.now()). */
  private readonly leftAt: number[] = [];

  /** Records a generation leaving now (finished or cancelled). */
  left(now = performance.now()): void {
    this.leftAt.push(now);
  }

  /**
   * Seconds until a queue of `maxQueue` holding `waiting` has room for `count` more: the generations over the
   * limit / the generations that left in the last minute per second (at least 1 s; 1 s per waiting generation per
   * batch slot while nothing has left yet).
   */
  retryAfterSeconds(waiting: number, count: number, maxQueue: number, maxBatch: number): number {
    const now = performance.now();
    while (this.leftAt.length > 0 && this.leftAt[0]! < now - 60_000) this.leftAt.shift();
    const over = waiting + count - maxQueue;
    if (this.leftAt.length < 2) return Math.max(1, Math.ceil(over / maxBatch));
    const perSecond = this.leftAt.length / Math.max(1, (now - this.leftAt[0]!) / 1000);
    return Math.min(3600, Math.max(1, Math.ceil(over / perSecond)));
  }
}

/**
 * The admission answers of a submission, shared by both schedulers so they say the same: 503 while refusing work,
 * 400 for a generation larger than the KV pool or more generations than the queue holds, 429 (with Retry-After)
 * when the queue has no room now.
 */
export function checkSubmission(
  requests: readonly GenerationRequest[],
  s: {
    readonly refusing: "draining" | "failed" | null;
    readonly waiting: number;
    readonly maxQueue: number;
    readonly admission: (r: GenerationRequest) => {
      readonly admit: string;
      readonly pages: number;
      readonly pagesTotal: number;
    };
    readonly retryAfter: (count: number) => number;
  },
): void {
  if (s.refusing === "draining") throw new ApiError(503, "server_shutting_down", "the server is shutting down");
  if (s.refusing === "failed")
    throw new ApiError(503, "internal_error", "the engine failed and the server cannot generate: restart it");
  for (const r of requests) {
    const a = s.admission(r);
    if (a.admit === "never") {
      throw new ApiError(
        400,
        "kv_capacity_exceeded",
        `the request needs ${a.pages} KV pages (${r.prompt.length} prompt + ${r.maxTokens} max_tokens tokens) but the server's KV cache has ${a.pagesTotal} in all; lower max_tokens or shorten the prompt`,
        "max_tokens",
      );
    }
  }
  // Retrying cannot help a request larger than the queue itself: that is the client's error, not busy-ness.
  if (requests.length > s.maxQueue) {
    throw new ApiError(
      400,
      "too_many_generations",
      `the request has ${requests.length} generations (prompts x n) but this server queues at most ${s.maxQueue} at once; send fewer prompts or a smaller n`,
      "n",
    );
  }
  const room = s.maxQueue - s.waiting;
  if (requests.length > room) {
    const after = s.retryAfter(requests.length);
    throw new ApiError(
      429,
      "server_busy",
      `the server is busy: ${s.waiting} requests are waiting (at most ${s.maxQueue}); retry after ${after} s`,
      null,
      { "retry-after": String(after) },
    );
  }
}

class Job implements GenerationJob {
  readonly events = new Channel<GenerationEvent>();
  readonly submitted = performance.now();
  seq: EngineSequence | null = null;
  tokens = 0;
  lastTokenAt = 0;
  over = false;

  constructor(
    readonly req: GenerationRequest,
    private readonly onCancel: (job: Job) => void,
    private readonly sink: JobSink | undefined,
  ) {}

  /** Sends an event to the sink, else to the channel. */
  emit(event: GenerationEvent): void {
    if (this.sink === undefined) this.events.push(event);
    else this.sink.event(this, event);
  }

  cancel(): void {
    if (this.over) return;
    this.over = true;
    this.events.close();
    this.onCancel(this);
  }
}

/** Schedules generations over one engine with continuous batching and bounded waiting. */
export class Scheduler implements ServeScheduler {
  private readonly waiting: Job[] = [];
  private active: Job[] = [];
  private running = false;
  private stopping = false;
  private steps = 0;
  /** Generations that left recently, for the drain rate behind Retry-After. */
  private readonly rate = new DrainRate();

  /**
   * @param engine - the engine whose sequences the loop steps.
   * @param options - batch and queue bounds, and the metrics observer.
   */
  constructor(
    private readonly engine: BatchEngine,
    private readonly options: SchedulerOptions,
  ) {
    invariant(Number.isSafeInteger(options.maxBatch) && options.maxBatch >= 1, "maxBatch must be a positive integer");
  }

  /** Requests waiting for a slot. */
  get queueDepth(): number {
    return this.waiting.length;
  }

  /** Sequences in the running batch. */
  get activeSequences(): number {
    return this.active.length;
  }

  /** Tokens held in the active sequences' KV caches (a sampled token not yet run is not held). */
  get kvTokens(): number {
    return this.active.reduce((n, j) => n + (j.seq?.cached ?? 0), 0);
  }

  /** Engine steps run so far. */
  get stepCount(): number {
    return this.steps;
  }

  /** Whether new work is refused (draining or shut down). */
  get draining(): boolean {
    return this.stopping;
  }

  /** "draining" once a drain or shutdown began, else null. */
  get refusing(): "draining" | null {
    return this.stopping ? "draining" : null;
  }

  /**
   * Seconds until the queue has room for `count` more, from the measured drain rate: generations that left in
   * the last minute per second (at least 1 s; 1 s per waiting generation per batch slot while nothing has left yet).
   */
  retryAfterSeconds(count: number): number {
    return this.rate.retryAfterSeconds(this.waiting.length, count, this.options.maxQueue, this.options.maxBatch);
  }

  /**
   * Queues generations (the choices of one request) together: all are admitted to the queue or none is.
   * A queued generation waits until its KV pages are free.
   * @throws ApiError 400 when the request could never run: a generation needs more KV pages than the whole
   * pool has (`kv_capacity_exceeded`), or it has more generations than the queue holds (`too_many_generations`);
   * 429 with a `Retry-After` when the queue has no room for them now; 503 while shutting down.
   */
  submit(requests: readonly GenerationRequest[]): GenerationJob[] {
    checkSubmission(requests, {
      refusing: this.refusing,
      waiting: this.waiting.length,
      maxQueue: this.options.maxQueue,
      admission: (r) => this.engine.admission(r.prompt, r.maxTokens),
      retryAfter: (count) => this.retryAfterSeconds(count),
    });
    const jobs = requests.map((r) => new Job(r, (j) => this.dropped(j), this.options.sink));
    this.waiting.push(...jobs);
    this.kick();
    return jobs;
  }

  /**
   * Refuses new work (503) and resolves once every queued and running generation has ended, or after
   * `timeoutMs`; resolves to whether it drained. Call {@link Scheduler.shutdown} afterwards for the rest.
   */
  async drain(timeoutMs: number): Promise<boolean> {
    this.stopping = true;
    const end = performance.now() + timeoutMs;
    while (this.waiting.length + this.active.length > 0) {
      if (performance.now() >= end) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return true;
  }

  /** Refuses new work and cancels everything queued or running. */
  shutdown(): void {
    this.stopping = true;
    for (const j of [...this.waiting, ...this.active])
      this.fail(j, new ApiError(503, "server_shutting_down", "the server is shutting down"));
  }

  private dropped(job: Job): void {
    this.rate.left();
    const w = this.waiting.indexOf(job);
    if (w >= 0) this.waiting.splice(w, 1);
    // Between steps (cancel runs on the event loop, never inside a step), so the sequence can go now.
    const a = this.active.indexOf(job);
    if (a >= 0) this.active.splice(a, 1);
    job.seq?.release();
    this.options.observer?.finished(job.req.prompt.length, job.tokens, "cancelled");
    this.options.observer?.ended?.((performance.now() - job.submitted) / 1000);
  }

  private kick(): void {
    if (this.running) return;
    this.running = true;
    setImmediate(() => {
      this.loop().catch((err: unknown) => {
        // Not reachable by design (steps and tokens catch their own errors); never let it kill the server.
        for (const j of [...this.waiting, ...this.active])
          this.fail(j, new ApiError(500, "internal_error", `scheduler failed: ${(err as Error).message}`));
      });
    });
  }

  private async loop(): Promise<void> {
    try {
      for (;;) {
        this.admit();
        if (this.active.length === 0) return;
        this.tick();
        // Let the HTTP side run between steps: new requests queue, disconnects cancel, events flush.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      this.running = false;
      // While draining, queued work still runs to completion; after shutdown nothing is queued. Work waiting
      // for pages held outside this scheduler is polled for rather than spun on.
      if (this.waiting.length > 0) setTimeout(() => this.kick(), 10);
    }
  }

  /**
   * Admits the head of the queue when a batch slot and its KV pages are free (first come, first served: a
   * large request is not overtaken). One per step, so a step prefills at most one new prompt and the event
   * loop (health checks, streaming) is not held for a burst of arrivals.
   */
  private admit(): void {
    this.expire();
    if (this.active.length < this.options.maxBatch && this.waiting.length > 0) {
      const job = this.waiting[0]!;
      if (this.engine.admission(job.req.prompt, job.req.maxTokens).admit !== "now") return;
      this.waiting.shift();
      this.options.observer?.queued?.((performance.now() - job.submitted) / 1000);
      try {
        job.seq = this.engine.begin(job.req.prompt, job.req);
      } catch (err) {
        this.fail(job, new ApiError(503, "internal_error", `cannot start the generation: ${(err as Error).message}`));
        return;
      }
      this.active.push(job);
      this.options.sink?.admitted(job);
    }
  }

  /** Fails generations that waited longer than the queue timeout (503: the server is overloaded, not the client wrong). */
  private expire(): void {
    const limit = this.options.queueTimeoutMs;
    if (limit === undefined) return;
    const now = performance.now();
    for (const job of this.waiting.filter((j) => now - j.submitted > limit)) {
      this.fail(
        job,
        new ApiError(
          503,
          "queue_timeout",
          `the request waited ${((now - job.submitted) / 1000).toFixed(1)} s for a slot (the limit is ${limit / 1000} s): the server is overloaded; retry later`,
        ),
      );
    }
  }

  private tick(): void {
    const batch = this.active;
    let rows: Float32Array[];
    try {
      rows = this.engine.step(batch.map((j) => j.seq!));
    } catch (err) {
      // An engine failure fails this step's requests, not the server.
      for (const j of [...batch])
        this.fail(j, new ApiError(500, "internal_error", `the engine failed: ${(err as Error).message}`));
      return;
    }
    this.steps++;
    const now = performance.now();
    batch.forEach((job, i) => {
      try {
        this.advance(job, rows[i]!, now);
      } catch (err) {
        // A failure in sampling or detokenizing ends that generation only.
        this.fail(job, new ApiError(500, "internal_error", `generation failed: ${(err as Error).message}`));
      }
    });
    this.active = this.active.filter((j) => !j.over);
  }

  private advance(job: Job, logits: Float32Array, now: number): void {
    const obs = this.options.observer;
    const seq = job.seq!;
    let tail = "";
    for (const e of seq.accept(logits)) {
      if (e.kind === "text") {
        tail += e.text;
        continue;
      }
      if (job.tokens === 0) obs?.firstToken((now - job.submitted) / 1000);
      else obs?.interToken((now - job.lastTokenAt) / 1000);
      job.lastTokenAt = now;
      job.tokens++;
      job.emit({ kind: "token", id: e.id, text: e.text, logprob: e.logprob, top: e.top });
    }
    const finish = seq.finish;
    if (finish === null) return;
    // OpenAI reports an EOS or a stop string alike as "stop".
    const reason: FinishReason = finish === "length" ? "length" : "stop";
    job.over = true;
    seq.release();
    this.rate.left(now);
    job.emit({
      kind: "done",
      text: tail,
      finishReason: reason,
      promptTokens: job.req.prompt.length,
      completionTokens: seq.generated,
    });
    job.events.close();
    obs?.finished(job.req.prompt.length, seq.generated, reason);
    obs?.ended?.((now - job.submitted) / 1000);
  }

  private fail(job: Job, error: ApiError): void {
    if (job.over) return;
    job.over = true;
    job.seq?.release();
    const w = this.waiting.indexOf(job);
    if (w >= 0) this.waiting.splice(w, 1);
    this.active = this.active.filter((j) => j !== job);
    job.emit({ kind: "error", error });
    job.events.close();
    this.options.observer?.finished(job.req.prompt.length, job.tokens, "error");
    this.options.observer?.ended?.((performance.now() - job.submitted) / 1000);
  }
}

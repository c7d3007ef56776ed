// The engine and its scheduler on a worker thread (issue #20, decision 2004): a CPU decode step blocks its
// thread for the whole step (the executor waits on its kernel workers), so on the HTTP thread /health and every
// stream waited for it. Here the worker owns the model, the executors and a Scheduler; the HTTP thread keeps a
// RemoteScheduler that answers admission (400/429/503) synchronously from what it knows (its own queue, the KV
// pool's size) and receives each step's tokens, completions and engine stats as one message.
import * as fs from "node:fs";
import { Worker } from "node:worker_threads";
import { loadTokenizer, type ChatMessage } from "@poot/models";
import type { PlacementReport } from "@poot/runtime";
import { ApiError, type ApiErrorCode, invariant } from "../errors.js";
import type { PlacementFlags } from "../placement.js";
import { Channel } from "./channel.js";
import type { EngineStats, PlacementSummary, PromptLogprob, RelocateResult, RemoteServeEngine } from "./engine.js";
import {
  DrainRate,
  checkSubmission,
  type GenerationEvent,
  type GenerationJob,
  type GenerationRequest,
  type SchedulerOptions,
  type ServeScheduler,
} from "./scheduler.js";
import { textCodec, type TextCodec } from "./text.js";
import { TextWorker } from "./text-worker.js";

/** The runtime engine's options the worker loads the model with (`Engine.load`'s, less the executors). */
export interface EngineWorkerLoad {
  readonly weights?: "f32" | "bf16";
  readonly maxSequences?: number;
  readonly context?: number;
  readonly prefillChunk?: number;
  readonly pageSize?: number;
  readonly kvPages?: number;
  /** Reuse cached prompt prefixes' KV pages (`--prefix-cache`). */
  readonly prefixCache?: boolean;
}

/** Options of {@link EngineWorker.start}. */
export interface EngineWorkerOptions {
  /** The model folder or .gguf file. */
  readonly model: string;
  /**
   * A module (URL or absolute file URL string) the worker imports to make executors: its export
   * `executorExport` (default `executorFactory`) is called with the device names the engine needs and the
   * command, and returns (or resolves to) an ExecutorFactory. Functions cannot cross threads; a module can.
   */
  readonly executorModule: URL | string;
  /** The factory-making export of `executorModule` (default `executorFactory`). */
  readonly executorExport?: string;
  /** The `--backend` name (the engine's default device). */
  readonly backend: string;
  /** The command named in executor errors (default `serve`). */
  readonly command?: string;
  /**
   * The placement flags (`--place`, `--gpu-layers`, memory budgets, `--no-prefetch`), planned in the worker as
   * `poot run` plans them (planDevices: the default placement asks the backend's executor for its memory).
   */
  readonly placement?: PlacementFlags;
  /** The device names `--place` may use (the CLI's backend table; default: `backend` alone). */
  readonly backends?: readonly string[];
  /** Engine.load options. */
  readonly load?: EngineWorkerLoad;
  /** A Jinja chat template replacing the model's own. */
  readonly chatTemplate?: string;
  /** Compile every program before serving (`poot serve` without --no-prepare). */
  readonly prepare?: boolean;
  /**
   * The nice value (0-19) of the engine's thread and the executor threads it starts, on Linux (default 5): when
   * the engine's compute and the HTTP thread want the same core, the HTTP thread runs first. 0 leaves it as is.
   */
  readonly nice?: number;
  /** Where a failure of the worker is reported, one line (default: stderr). */
  readonly log?: (line: string) => void;
}

/** What the worker reports once the engine is loaded. */
export interface EngineWorkerInfo {
  readonly context: number;
  readonly kvTokens: number;
  readonly vocabSize: number;
  readonly eosTokenIds: readonly number[];
  readonly hiddenSize: number;
  readonly pageSize: number;
  readonly pagesTotal: number;
  /** Whether the model has a tokenizer (the server needs one). */
  readonly tokenizer: boolean;
  readonly stats: EngineStats;
  /** The placement `poot serve` prints (with how the default was chosen), or null for one program. */
  readonly placementReport: (PlacementReport & { readonly chosen?: string }) | null;
  /** Where the blocks are, as `/admin/place` answers; null for one program. */
  readonly placement: PlacementSummary | null;
  /** Programs compiled and seconds spent when `prepare` was asked. */
  readonly prepared: { readonly programs: number; readonly seconds: number } | null;
}

/** A loading failure in the worker, classified so the CLI can say it as it says the in-process ones. */
export class EngineWorkerError extends Error {
  override readonly name = "EngineWorkerError";

  /**
   * @param kind - which package's error it was (`model`: @poot/models, `runtime`, `cli`: an executor factory's).
   * @param message - its message.
   * @param code - its code, when it had one.
   * @param file - the file it names, when it had one.
   */
  constructor(
    readonly kind: "model" | "runtime" | "cli" | "other",
    message: string,
    readonly code: string | undefined,
    readonly file: string | undefined,
  ) {
    super(message);
  }
}

/** What the worker is started with. */
export interface EngineWorkerData {
  readonly model: string;
  readonly executorModule: string;
  readonly executorExport: string;
  readonly backend: string;
  readonly command: string;
  readonly placement: PlacementFlags;
  readonly backends: readonly string[];
  readonly load: EngineWorkerLoad;
  readonly prepare: boolean;
  readonly nice: number;
}

/** A generation request on the wire (the prompt a transferred Int32Array). */
export type WireRequest = Omit<GenerationRequest, "prompt"> & { readonly prompt: Int32Array };

/** An event on the wire: an ApiError travels as its fields. */
export type WireEvent =
  | Exclude<GenerationEvent, { kind: "error" }>
  | {
      readonly kind: "error";
      readonly status: number;
      readonly code: ApiErrorCode;
      readonly message: string;
      readonly param: string | null;
      readonly headers: Readonly<Record<string, string>>;
    };

/** Messages to the worker. */
export type ToWorker =
  | { readonly op: "schedule"; readonly maxBatch: number; readonly maxQueue: number }
  | { readonly op: "submit"; readonly jobs: readonly { readonly id: number; readonly req: WireRequest }[] }
  | { readonly op: "cancel"; readonly ids: readonly number[] }
  | {
      readonly op: "call";
      readonly id: number;
      readonly call:
        | { readonly kind: "hidden"; readonly ids: Int32Array }
        | { readonly kind: "promptLogprobs"; readonly ids: Int32Array; readonly top: number }
        | { readonly kind: "relocate"; readonly place: string };
    }
  | { readonly op: "shutdown" }
  | { readonly op: "close" };

/** The answer to a call: hidden rows, a relocation's result (with the placement after it), or an error's message. */
export interface WorkerReply {
  readonly kind: "reply";
  readonly id: number;
  readonly hidden?: Float32Array;
  readonly promptLogprobs?: PromptLogprob[];
  readonly relocated?: RelocateResult;
  readonly error?: string;
}

/** What one scheduler turn released: jobs admitted to the batch, events in order, and the figures after it. */
export interface WorkerBatch {
  readonly kind: "batch";
  readonly admitted: readonly number[];
  readonly events: readonly { readonly job: number; readonly event: WireEvent }[];
  readonly stats: EngineStats;
  readonly kvTokens: number;
  readonly steps: number;
}

/** Messages from the worker. */
export type FromWorker =
  | { readonly kind: "ready"; readonly info: EngineWorkerInfo }
  | {
      readonly kind: "fatal";
      readonly error: {
        readonly kind: EngineWorkerError["kind"];
        readonly message: string;
        readonly code?: string;
        readonly file?: string;
      };
    }
  | WorkerBatch
  | WorkerReply
  | { readonly kind: "closed" };

/** The worker script: next to this module once bundled (dist/engine-worker.js); from the sources, the built copy. */
function workerScript(): URL {
  const candidates = [
    new URL("./engine-worker.js", import.meta.url),
    new URL("../../dist/engine-worker.js", import.meta.url),
  ];
  const found = candidates.find((u) => fs.existsSync(u));
  invariant(found !== undefined, "dist/engine-worker.js is missing: build @poot/serve (pnpm build)");
  return found;
}

/**
 * The engine on a worker thread, as the HTTP server sees it: sizes and text (a tokenizer here for output, the text
 * worker for input) and a scheduler that forwards generations to the worker. Start it with
 * {@link EngineWorker.start}; `poot serve` serves through it.
 */
export class EngineWorker implements RemoteServeEngine {
  private readonly codec: TextCodec;
  private readonly text: TextWorker;
  private scheduler: RemoteScheduler | null = null;
  private closing = false;
  private calls = 0;
  private readonly pending = new Map<number, { resolve: (r: WorkerReply) => void; reject: (e: Error) => void }>();
  /** Where the blocks are now (updated by relocations). */
  private place: PlacementSummary | null;
  /** Resolves once the worker thread has exited. */
  readonly exited: Promise<void>;
  /** The latest engine stats the worker published. */
  private latest: EngineStats;
  /** Most UTF-8 bytes of text one token can stand for (the longest token string's bytes, an upper bound). */
  readonly maxTokenBytes: number;

  private constructor(
    private readonly worker: Worker,
    /** What the worker reported on loading. */
    readonly info: EngineWorkerInfo,
    options: EngineWorkerOptions,
    exited: Promise<void>,
  ) {
    this.latest = info.stats;
    this.place = info.placement;
    this.exited = exited;
    const tok = loadTokenizer(options.model);
    this.codec = textCodec(tok, options.chatTemplate);
    let most = 1;
    for (let id = 0; id < tok.vocabSize; id++) most = Math.max(most, Buffer.byteLength(tok.idToToken(id) ?? ""));
    this.maxTokenBytes = most;
    this.text = new TextWorker({
      model: options.model,
      ...(options.chatTemplate === undefined ? {} : { chatTemplate: options.chatTemplate }),
    });
  }

  /**
   * Starts the worker, which loads the model and makes its executors; resolves once it is ready to generate.
   * @throws EngineWorkerError when the worker cannot load the model or make an executor.
   */
  static async start(options: EngineWorkerOptions): Promise<EngineWorker> {
    const data: EngineWorkerData = {
      model: options.model,
      executorModule: String(options.executorModule),
      executorExport: options.executorExport ?? "executorFactory",
      backend: options.backend,
      command: options.command ?? "serve",
      placement: options.placement ?? {},
      backends: options.backends ?? [options.backend],
      load: options.load ?? {},
      prepare: options.prepare === true,
      nice: options.nice ?? 5,
    };
    invariant(Number.isInteger(data.nice) && data.nice >= 0 && data.nice <= 19, "nice must be an integer in [0, 19]");
    const log = options.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
    // No inherited flags: a test runner's `--conditions source` would resolve @poot/* to TypeScript sources.
    const worker = new Worker(workerScript(), { workerData: data, execArgv: [] });
    let onExit: (code: number) => void = () => {};
    const exited = new Promise<void>((resolve) => {
      worker.once("exit", (code) => {
        onExit(code);
        resolve();
      });
    });
    const info = await new Promise<EngineWorkerInfo>((resolve, reject) => {
      const fail = (err: Error): void => {
        void worker.terminate();
        reject(err);
      };
      worker.once("message", (m: FromWorker) => {
        if (m.kind === "ready") resolve(m.info);
        else if (m.kind === "fatal")
          fail(new EngineWorkerError(m.error.kind, m.error.message, m.error.code, m.error.file));
        else fail(new Error(`poot internal error: the engine worker sent ${m.kind} before ready`));
      });
      worker.once("error", (err) =>
        fail(new EngineWorkerError("other", `the engine worker failed: ${err.message}`, undefined, undefined)),
      );
      onExit = (code) =>
        fail(
          new EngineWorkerError("other", `the engine worker exited (code ${code}) while loading`, undefined, undefined),
        );
    });
    worker.removeAllListeners("message");
    worker.removeAllListeners("error");
    if (!info.tokenizer) {
      await worker.terminate();
      throw new EngineWorkerError(
        "other",
        `${options.model} has no tokenizer (tokenizer.json): the server needs one`,
        "no-tokenizer",
        options.model,
      );
    }
    let self: EngineWorker;
    try {
      self = new EngineWorker(worker, info, options, exited);
    } catch (err) {
      await worker.terminate();
      throw err;
    }
    worker.on("message", (m: FromWorker) => self.received(m));
    // An uncaught error ends the worker; 'exit' follows and fails what was in flight (once).
    let lastError: string | null = null;
    worker.on("error", (err) => {
      lastError = err.message;
    });
    onExit = (code) => {
      if (self.closing) return;
      const why = `the engine worker stopped (exit code ${code})${lastError === null ? "" : `: ${lastError}`}`;
      log(`poot serve: ${why}; in-flight requests failed, /health reports failed`);
      self.scheduler?.failAll(why);
      self.failCalls(why);
    };
    return self;
  }

  private received(m: FromWorker): void {
    if (m.kind === "batch") {
      this.latest = m.stats;
      this.scheduler?.receive(m);
    } else if (m.kind === "reply") {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.error !== undefined) p?.reject(new Error(m.error));
      else p?.resolve(m);
    }
  }

  /** Rejects every call waiting for the worker. */
  private failCalls(why: string): void {
    for (const p of this.pending.values()) p.reject(new Error(why));
    this.pending.clear();
  }

  /** Asks the worker to do `call` between steps; resolves to its reply. */
  private call(call: Extract<ToWorker, { op: "call" }>["call"], transfer: ArrayBuffer[] = []): Promise<WorkerReply> {
    if (this.closing || this.scheduler?.refusing === "failed")
      return Promise.reject(new Error("the engine worker is not running"));
    const id = this.calls++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.post({ op: "call", id, call }, transfer);
    });
  }

  /** The model's hidden size. */
  get hiddenSize(): number {
    return this.info.hiddenSize;
  }

  /** The final normed hidden states of `ids` (one stateless prefill on the worker, between steps). */
  async hidden(ids: readonly number[]): Promise<Float32Array> {
    const packed = Int32Array.from(ids);
    const r = await this.call({ kind: "hidden", ids: packed }, [packed.buffer as ArrayBuffer]);
    return r.hidden!;
  }

  /** Each prompt token's logprob after the ones before it (a stateless prefill on the worker, between steps). */
  async promptLogprobs(ids: readonly number[], top: number): Promise<PromptLogprob[]> {
    const packed = Int32Array.from(ids);
    const r = await this.call({ kind: "promptLogprobs", ids: packed, top }, [packed.buffer as ArrayBuffer]);
    return r.promptLogprobs!;
  }

  /** Where the blocks are (as of the last relocation); null when the model runs as one program. */
  placement(): PlacementSummary | null {
    return this.place;
  }

  /** Moves blocks to `place`'s devices on the worker, between steps (decision 1707). */
  async relocate(place: string): Promise<RelocateResult> {
    const r = await this.call({ kind: "relocate", place });
    const result = r.relocated!;
    if ("placement" in result) this.place = result.placement;
    return result;
  }

  /** The engine's KV capacity per sequence. */
  get context(): number {
    return this.info.context;
  }

  /** Tokens the engine's whole KV page pool holds. */
  get kvTokens(): number {
    return this.info.kvTokens;
  }

  /** The model's vocabulary size. */
  get vocabSize(): number {
    return this.info.vocabSize;
  }

  /** The model config's EOS ids. */
  get eosTokenIds(): readonly number[] {
    return this.info.eosTokenIds;
  }

  /** The tokenizer's ids of `text`, from the text worker. */
  encode(text: string, special: boolean): Promise<number[]> {
    return this.text.encode(text, special);
  }

  /** The ids of the rendered chat (tools given to the template), from the text worker; null without a template. */
  encodeChat(messages: readonly ChatMessage[], tools?: readonly unknown[] | null): Promise<number[] | null> {
    return this.text.chat(messages, tools);
  }

  /** The tokenizer's decoding of `ids`. */
  textOf(ids: readonly number[]): string {
    return this.codec.tok.decode(ids);
  }

  /** One token decoded alone. */
  tokenText(id: number): string {
    return this.codec.tok.decode([id]);
  }

  /** The engine stats the worker published last (after its latest step, admission or release). */
  stats(): EngineStats {
    return this.latest;
  }

  /** The scheduler that runs generations on the worker (one per engine). */
  createScheduler(options: SchedulerOptions): ServeScheduler {
    invariant(this.scheduler === null, "an EngineWorker has one scheduler");
    this.scheduler = new RemoteScheduler(this.info, options, (m, transfer) => this.post(m, transfer));
    this.post({ op: "schedule", maxBatch: options.maxBatch, maxQueue: options.maxQueue });
    return this.scheduler;
  }

  private post(m: ToWorker, transfer: ArrayBuffer[] = []): void {
    if (!this.closing) this.worker.postMessage(m, transfer);
  }

  /**
   * Frees the engine and its executors on the worker, which then exits (await {@link EngineWorker.exited}); stops
   * the text worker. Anything still running is cancelled.
   */
  close(): void {
    if (this.closing) return;
    this.post({ op: "close" });
    this.closing = true;
    this.scheduler?.failAll("the engine was closed");
    this.failCalls("the engine was closed");
    void this.text.close();
    // A worker stuck in a step past this gets stopped.
    setTimeout(() => void this.worker.terminate(), 30_000).unref();
  }
}

class RemoteJob implements GenerationJob {
  readonly events = new Channel<GenerationEvent>();
  readonly submitted = performance.now();
  state: "waiting" | "active" | "over" = "waiting";
  tokens = 0;
  lastTokenAt = 0;
  timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    readonly id: number,
    readonly req: GenerationRequest,
    private readonly onCancel: (job: RemoteJob) => void,
  ) {}

  cancel(): void {
    if (this.state !== "over") this.onCancel(this);
  }
}

/**
 * The HTTP thread's side of the worker's scheduler: the same answers as the in-process Scheduler (shared
 * checkSubmission), from its own view of the queue (submitted and not yet admitted by the worker: never smaller
 * than the worker's own, so the worker never refuses what was accepted here) and the KV pool's fixed size. Queue
 * timeouts run here, on timers, so they fire even while the worker is inside a long step.
 */
class RemoteScheduler implements ServeScheduler {
  private readonly jobs = new Map<number, RemoteJob>();
  private readonly rate = new DrainRate();
  private next = 0;
  private waiting = 0;
  private active = 0;
  private stopping = false;
  private failure: string | null = null;
  private steps = 0;
  private kv = 0;

  constructor(
    private readonly info: EngineWorkerInfo,
    private readonly options: SchedulerOptions,
    private readonly post: (m: ToWorker, transfer?: ArrayBuffer[]) => void,
  ) {
    invariant(Number.isSafeInteger(options.maxBatch) && options.maxBatch >= 1, "maxBatch must be a positive integer");
  }

  get queueDepth(): number {
    return this.waiting;
  }

  get activeSequences(): number {
    return this.active;
  }

  get kvTokens(): number {
    return this.kv;
  }

  get stepCount(): number {
    return this.steps;
  }

  get draining(): boolean {
    return this.stopping || this.failure !== null;
  }

  get refusing(): "draining" | "failed" | null {
    return this.failure !== null ? "failed" : this.stopping ? "draining" : null;
  }

  retryAfterSeconds(count: number): number {
    return this.rate.retryAfterSeconds(this.waiting, count, this.options.maxQueue, this.options.maxBatch);
  }

  submit(requests: readonly GenerationRequest[]): GenerationJob[] {
    const { context, pageSize, pagesTotal } = this.info;
    checkSubmission(requests, {
      refusing: this.refusing,
      waiting: this.waiting,
      maxQueue: this.options.maxQueue,
      // Whether it can ever fit is fixed by the pool's size; when it fits now is the worker's to decide.
      admission: (r) => {
        const pages = Math.ceil(Math.min(r.prompt.length + r.maxTokens, context) / pageSize);
        return { admit: pages > pagesTotal ? "never" : "now", pages, pagesTotal };
      },
      retryAfter: (count) => this.retryAfterSeconds(count),
    });
    const jobs = requests.map((r) => new RemoteJob(this.next++, r, (j) => this.cancelled(j)));
    const limit = this.options.queueTimeoutMs;
    for (const j of jobs) {
      this.jobs.set(j.id, j);
      this.waiting++;
      if (limit !== undefined) {
        j.timer = setTimeout(() => this.expire(j, limit), limit);
        j.timer.unref();
      }
    }
    const wire = jobs.map((j) => ({ id: j.id, req: { ...j.req, prompt: Int32Array.from(j.req.prompt) } }));
    this.post(
      { op: "submit", jobs: wire },
      wire.map((w) => w.req.prompt.buffer as ArrayBuffer),
    );
    return jobs;
  }

  async drain(timeoutMs: number): Promise<boolean> {
    this.stopping = true;
    const end = performance.now() + timeoutMs;
    while (this.jobs.size > 0) {
      if (performance.now() >= end) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return true;
  }

  shutdown(): void {
    this.stopping = true;
    this.post({ op: "shutdown" });
    for (const j of [...this.jobs.values()])
      this.fail(j, new ApiError(503, "server_shutting_down", "the server is shutting down"));
  }

  /** Fails everything in flight with a 500 naming `why` and refuses new work (the worker is gone). */
  failAll(why: string): void {
    this.failure ??= why;
    for (const j of [...this.jobs.values()]) this.fail(j, new ApiError(500, "internal_error", why));
  }

  /** Applies one message of the worker: admissions, events in order, then the figures after them. */
  receive(m: WorkerBatch): void {
    this.steps = m.steps;
    this.kv = m.kvTokens;
    for (const id of m.admitted) {
      const j = this.jobs.get(id);
      if (j !== undefined && j.state === "waiting") this.start(j);
    }
    const now = performance.now();
    const obs = this.options.observer;
    for (const { job, event: e } of m.events) {
      const j = this.jobs.get(job);
      if (j === undefined) continue;
      if (e.kind === "token") {
        if (j.state === "waiting") this.start(j);
        if (j.tokens === 0) obs?.firstToken((now - j.submitted) / 1000);
        else obs?.interToken((now - j.lastTokenAt) / 1000);
        j.lastTokenAt = now;
        j.tokens++;
        j.events.push(e);
      } else if (e.kind === "done") {
        this.rate.left(now);
        this.end(j);
        j.events.push(e);
        j.events.close();
        obs?.finished(e.promptTokens, e.completionTokens, e.finishReason);
      } else {
        this.fail(j, new ApiError(e.status, e.code, e.message, e.param, e.headers));
      }
    }
  }

  private start(j: RemoteJob): void {
    j.state = "active";
    this.waiting--;
    this.active++;
    if (j.timer !== null) clearTimeout(j.timer);
    this.options.observer?.queued?.((performance.now() - j.submitted) / 1000);
  }

  /** Takes a job out of the books (it sends nothing more). */
  private end(j: RemoteJob): void {
    if (j.state === "waiting") this.waiting--;
    else if (j.state === "active") this.active--;
    j.state = "over";
    if (j.timer !== null) clearTimeout(j.timer);
    this.jobs.delete(j.id);
    this.options.observer?.ended?.((performance.now() - j.submitted) / 1000);
  }

  private cancelled(j: RemoteJob): void {
    this.rate.left();
    this.end(j);
    j.events.close();
    this.post({ op: "cancel", ids: [j.id] });
    this.options.observer?.finished(j.req.prompt.length, j.tokens, "cancelled");
  }

  private expire(j: RemoteJob, limit: number): void {
    if (j.state !== "waiting") return;
    const waited = (performance.now() - j.submitted) / 1000;
    this.fail(
      j,
      new ApiError(
        503,
        "queue_timeout",
        `the request waited ${waited.toFixed(1)} s for a slot (the limit is ${limit / 1000} s): the server is overloaded; retry later`,
      ),
    );
    this.post({ op: "cancel", ids: [j.id] });
  }

  private fail(j: RemoteJob, error: ApiError): void {
    if (j.state === "over") return;
    this.end(j);
    j.events.push({ kind: "error", error });
    j.events.close();
    this.options.observer?.finished(j.req.prompt.length, j.tokens, "error");
  }
}

// Continuous batching: requests wait until a batch slot and the KV pages they can grow to are free (admission
// control), are prefilled alone, then decode one token per round together through the batched decode graph;
// each leaves the batch the round it finishes and its pages go back to the pool.
import type { Engine } from "./engine.js";
import {
  Decoding,
  checkGenerate,
  type GenerateOptions,
  type GenerationEvent,
  type GenerationResult,
} from "./decoding.js";
import { RuntimeError } from "./errors.js";

/** Options of {@link Scheduler}. */
export interface SchedulerOptions {
  /** Most sequences decoding at once (also bounded by the engine's recurrent-state lanes). Default 8. */
  readonly maxBatch?: number;
  /** Most requests waiting for a slot; `submit` beyond it throws `RuntimeError("busy")`. Default unlimited. */
  readonly maxWaiting?: number;
}

/** A submitted request. */
export interface RequestHandle {
  /** Request id (submission order). */
  readonly id: number;
  /** Settles when the request finishes, is cancelled (finishReason "cancelled") or fails. */
  readonly result: Promise<GenerationResult>;
  /** Stops the request and frees its State; its result resolves with what was generated. */
  cancel(): void;
}

/** Scheduler counters, e.g. for /metrics. */
export interface SchedulerStats {
  /** Requests decoding now. */
  readonly active: number;
  /** Requests waiting for a batch slot. */
  readonly waiting: number;
  /** Requests finished (any reason). */
  readonly completed: number;
  /** Batched rounds run. */
  readonly rounds: number;
}

interface Request {
  readonly id: number;
  readonly prompt: readonly number[];
  readonly options: GenerateOptions;
  readonly onEvent: ((ev: GenerationEvent) => void) | undefined;
  readonly resolve: (r: GenerationResult) => void;
  readonly reject: (e: unknown) => void;
  decoding: Decoding | null;
  prefillMs: number;
  firstTokenAt: number;
  steps: number;
  done: boolean;
}

/** Runs many generations over one engine with continuous batching; ticks on the event loop. */
export class Scheduler {
  private readonly maxBatch: number;
  private readonly maxWaiting: number;
  private readonly waitingQ: Request[] = [];
  private readonly activeSet: Request[] = [];
  private nextId = 1;
  private completed = 0;
  private rounds = 0;
  private scheduled = false;
  private polling: ReturnType<typeof setTimeout> | null = null;

  /** @param engine - the model to run; @param options - batch and queue limits. */
  constructor(
    private readonly engine: Engine,
    options: SchedulerOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? 8;
    this.maxWaiting = options.maxWaiting ?? Infinity;
    if (!Number.isSafeInteger(this.maxBatch) || this.maxBatch < 1)
      throw new RuntimeError("bad-config", `maxBatch must be a positive integer, got ${options.maxBatch}`, {
        param: "maxBatch",
        value: options.maxBatch,
      });
  }

  /** KV pages a request is admitted with: enough for its prompt and every token it may generate. */
  pagesNeeded(prompt: readonly number[], options: GenerateOptions): number {
    return this.engine.pool.pagesFor(Math.min(prompt.length + options.maxTokens, this.engine.context));
  }

  /**
   * Queues a generation; bad options throw here (RuntimeError), before any work: `kv-capacity` when the
   * request needs more KV pages than the whole pool has, `busy` when the waiting queue is full. A request
   * that fits the pool but not its free pages waits until enough are released.
   */
  submit(prompt: readonly number[], options: GenerateOptions, onEvent?: (ev: GenerationEvent) => void): RequestHandle {
    checkGenerate(this.engine, prompt, options);
    const need = this.pagesNeeded(prompt, options),
      pool = this.engine.pool;
    if (need > pool.pages) {
      throw new RuntimeError(
        "kv-capacity",
        `the request needs ${need} KV pages of ${pool.pageSize} tokens (${prompt.length} prompt + ${options.maxTokens} max tokens) but the pool has ${pool.pages}`,
        { param: "maxTokens", value: need },
      );
    }
    if (this.waitingQ.length >= this.maxWaiting)
      throw new RuntimeError("busy", `${this.waitingQ.length} requests are already waiting`, {
        value: this.waitingQ.length,
      });
    let resolve!: (r: GenerationResult) => void, reject!: (e: unknown) => void;
    const result = new Promise<GenerationResult>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const req: Request = {
      id: this.nextId++,
      prompt: [...prompt],
      options,
      onEvent,
      resolve,
      reject,
      decoding: null,
      prefillMs: 0,
      firstTokenAt: 0,
      steps: 0,
      done: false,
    };
    this.waitingQ.push(req);
    this.wake();
    return { id: req.id, result, cancel: () => this.cancel(req) };
  }

  /** Current counters. */
  get stats(): SchedulerStats {
    return {
      active: this.activeSet.length,
      waiting: this.waitingQ.length,
      completed: this.completed,
      rounds: this.rounds,
    };
  }

  private cancel(req: Request): void {
    if (req.done) return;
    const w = this.waitingQ.indexOf(req);
    if (w >= 0) this.waitingQ.splice(w, 1);
    req.decoding?.cancel();
    this.finish(req, "cancelled");
  }

  private wake(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.tick();
    });
  }

  private emit(req: Request, events: readonly GenerationEvent[]): void {
    for (const ev of events) req.onEvent?.(ev);
  }

  /** One round: admit waiting requests (prefill), then one batched decode step of everyone active. */
  private tick(): void {
    try {
      // First come, first served: the head waits for pages rather than being overtaken by smaller requests.
      // At most one prefill per round, so a burst of arrivals does not hold the event loop for many prompts.
      if (this.activeSet.length < this.maxBatch && this.waitingQ.length > 0 && this.fits(this.waitingQ[0]!))
        this.admit(this.waitingQ.shift()!);
      const batch = this.activeSet.filter((r) => !r.done);
      if (batch.length > 0) {
        const rows = this.engine.stepBatch(batch.map((r) => r.decoding!.session));
        this.rounds++;
        batch.forEach((r, i) => {
          r.steps++;
          this.emit(r, r.decoding!.accept(rows[i]!));
          if (r.decoding!.finish !== null) this.finish(r, r.decoding!.finish);
        });
      }
    } catch (err) {
      // A failure mid-round fails every request in it; the scheduler keeps serving new ones.
      for (const r of [...this.activeSet]) this.fail(r, err);
    }
    // Waiting requests that do not fit are woken by the release that frees their pages (drop); pages held by
    // sessions outside this scheduler are polled for.
    if (this.activeSet.length > 0) this.wake();
    else if (this.waitingQ.length > 0) this.poll();
  }

  private poll(): void {
    if (this.polling !== null) return;
    this.polling = setTimeout(() => {
      this.polling = null;
      this.wake();
    }, 10);
  }

  /** Whether a waiting request's pages (and a recurrent-state lane, when the model has them) are free now. */
  private fits(req: Request): boolean {
    const pool = this.engine.pool;
    if (this.engine.needsLane() && pool.stats.lanesInUse >= pool.lanes) return false;
    return this.pagesNeeded(req.prompt, req.options) <= pool.available;
  }

  private admit(req: Request): void {
    let s;
    try {
      s = this.engine.openSession({ reserveTokens: req.prompt.length + req.options.maxTokens });
    } catch (err) {
      this.fail(req, err);
      return;
    }
    req.decoding = new Decoding(this.engine, s, req.prompt, req.options);
    this.activeSet.push(req);
    try {
      const t0 = performance.now();
      const logits = s.step(req.prompt);
      req.prefillMs = performance.now() - t0;
      req.firstTokenAt = performance.now();
      this.emit(req, req.decoding.accept(logits));
      if (req.decoding.finish !== null) this.finish(req, req.decoding.finish);
    } catch (err) {
      this.fail(req, err);
    }
  }

  private finish(req: Request, reason: GenerationResult["finishReason"]): void {
    if (req.done) return;
    req.done = true;
    this.drop(req);
    const d = req.decoding;
    req.resolve({
      ids: d?.ids ?? [],
      text: d?.text ?? "",
      finishReason: reason,
      promptTokens: req.prompt.length,
      prefillMs: req.prefillMs,
      decodeMs: req.firstTokenAt === 0 ? 0 : performance.now() - req.firstTokenAt,
      decodeSteps: req.steps,
    });
  }

  private fail(req: Request, err: unknown): void {
    if (req.done) return;
    req.done = true;
    this.drop(req);
    req.reject(err);
  }

  private drop(req: Request): void {
    const i = this.activeSet.indexOf(req);
    if (i >= 0) this.activeSet.splice(i, 1);
    req.decoding?.session.release();
    this.completed++;
    // Pages came back: a waiting request may fit now.
    if (this.waitingQ.length > 0) this.wake();
  }
}

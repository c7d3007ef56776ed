// Continuous batching: one loop runs every active sequence as one engine step, samples each one's next
// token, and between steps lets finished or cancelled requests leave and waiting ones join (up to maxBatch,
// and only when the KV pages they can grow to are free: admission control, first come first served).
// The contract (requests, events, ServeScheduler) is scheduler-api.ts; the admission checks it shares with the
// engine worker's scheduler (remote-scheduler.ts) are admission.ts.
import { ApiError, invariant } from "../errors.js";
import { Channel } from "./channel.js";
import { DrainRate, checkSubmission } from "./admission.js";
import type { BatchEngine, EngineSequence } from "./engine.js";
import type {
  FinishReason,
  GenerationEvent,
  GenerationJob,
  GenerationRequest,
  JobSink,
  SchedulerOptions,
  ServeScheduler,
} from "./scheduler-api.js";

/** A generation queued or running in a {@link Scheduler}: its channel (or sink), sequence and token timings. */
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

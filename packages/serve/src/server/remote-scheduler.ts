// The HTTP thread's side of the engine worker's scheduler: jobs submitted to the worker, answered for admission
// here (shared checkSubmission), with queue timeouts on local timers and the worker's step batches applied in order.
import { ApiError, invariant } from "../errors.js";
import { Channel } from "./channel.js";
import type { EngineWorkerInfo, ToWorker, WorkerBatch } from "./engine-worker-protocol.js";
import { DrainRate, checkSubmission } from "./admission.js";
import type {
  GenerationEvent,
  GenerationJob,
  GenerationRequest,
  SchedulerOptions,
  ServeScheduler,
} from "./scheduler-api.js";

/** A generation submitted to the worker, as the HTTP thread tracks it (its events arrive in the worker's batches). */
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
export class RemoteScheduler implements ServeScheduler {
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

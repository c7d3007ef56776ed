// Admission, shared by both schedulers so they answer alike: the checks a submission passes before it is queued
// (503 while refusing, 400 for what could never run, 429 with Retry-After) and the measured drain rate behind it.
import { ApiError } from "../errors.js";
import type { GenerationRequest } from "./scheduler-api.js";

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

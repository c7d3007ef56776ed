// The schedulers of a several-model server seen as one (decision 2705): queue and batch figures summed over the
// loaded models for /health and /metrics, drain and shutdown applied to each; requests submit to their model's own.
import { invariant } from "../errors.js";
import type { ModelPool } from "./model-pool.js";
import type { GenerationJob, ServeScheduler } from "./scheduler-api.js";

/** The loaded models' schedulers of `pool` as one {@link ServeScheduler} (`submit` goes to a model's own). */
export function poolScheduler(pool: ModelPool): ServeScheduler {
  const sum = (read: (s: ServeScheduler) => number): number => pool.loaded.reduce((n, m) => n + read(m.scheduler), 0);
  return {
    get queueDepth() {
      return sum((s) => s.queueDepth);
    },
    get activeSequences() {
      return sum((s) => s.activeSequences);
    },
    get kvTokens() {
      return sum((s) => s.kvTokens);
    },
    get stepCount() {
      return sum((s) => s.stepCount);
    },
    get draining() {
      return pool.draining;
    },
    get refusing() {
      if (pool.draining) return "draining";
      return pool.loaded.some((m) => m.scheduler.refusing === "failed") ? "failed" : null;
    },
    retryAfterSeconds: (count) => Math.max(1, ...pool.loaded.map((m) => m.scheduler.retryAfterSeconds(count))),
    submit: (): GenerationJob[] => {
      invariant(false, "submit to a model's own scheduler (ModelPool.acquire)");
    },
    drain: async (timeoutMs) => {
      pool.draining = true;
      const done = await Promise.all(pool.loaded.map((m) => m.scheduler.drain(timeoutMs)));
      return done.every((d) => d);
    },
    shutdown: () => {
      pool.draining = true;
      for (const m of pool.loaded) m.scheduler.shutdown();
    },
  };
}

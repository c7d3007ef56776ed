// Other servers' metric names on /metrics, for dashboards built on them (decision 2703): vLLM's `vllm:*` labelled
// by model_name (one sample per served model), llama.cpp's `llamacpp:*` summed over the models in memory; and the
// sums over loaded models that both these and the server's own gauges read.
import type { Counter, Histogram, Registry } from "prom-client";
import { prom } from "./deps.js";
import type { EngineStats } from "./engine.js";
import type { MetricsCompat } from "./metrics.js";
import type { ModelInstance } from "./model-pool.js";
import type { SchedulerObserver, ServeScheduler } from "./scheduler-api.js";

/** vLLM's buckets for time to first token and per output token, and for request latency and queue time. */
const VLLM_TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
const VLLM_TPOT = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
const VLLM_REQUEST = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];

/**
 * Registers the compatibility metrics asked for; returns, for a model id, the observers that feed them alongside
 * the server's own (vLLM's carry the id as `model_name`; llama.cpp's are unlabelled sums).
 */
export function compatMetrics(
  registry: Registry,
  loaded: () => readonly ModelInstance[],
  compat: readonly MetricsCompat[],
): (id: string) => SchedulerObserver[] {
  const vllm = compat.includes("vllm") ? vllmMetrics(registry, loaded) : null;
  const llamacpp = compat.includes("llamacpp") ? llamacppMetrics(registry, loaded) : null;
  return (id) => [...(vllm === null ? [] : [vllm(id)]), ...(llamacpp === null ? [] : [llamacpp])];
}

/** Sums `read` over the loaded models' schedulers and engine stats, read at scrape time. */
export interface LoadedSums {
  scheduler(read: (s: ServeScheduler) => number): number;
  stats(read: (s: EngineStats) => number): number;
}

/** Sums over `loaded()`, each engine's stats read once per call. */
export function loadedSums(loaded: () => readonly ModelInstance[]): LoadedSums {
  return {
    scheduler: (read) => loaded().reduce((n, m) => n + read(m.scheduler), 0),
    stats: (read) => loaded().reduce((n, m) => n + read(m.engine.stats()), 0),
  };
}

const kvRatio = (kv: EngineStats["kv"]): number => (kv.pagesTotal === 0 ? 0 : kv.pagesInUse / kv.pagesTotal);

/** vLLM's names and label (model_name), as its Grafana dashboard queries them. */
function vllmMetrics(registry: Registry, loaded: () => readonly ModelInstance[]): (id: string) => SchedulerObserver {
  const { Counter, Gauge, Histogram } = prom();
  const labelNames = ["model_name"] as const;
  // Gauges: one sample per model in memory.
  const gauge = (name: string, help: string, read: (m: ModelInstance) => number): void =>
    void new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        for (const m of loaded()) this.set({ model_name: m.id }, read(m));
      },
    });
  const histogram = (name: string, help: string, buckets: number[]): Histogram<"model_name"> =>
    new Histogram({ name, help, labelNames, buckets, registers: [registry] });
  const counter = (name: string, help: string): Counter<"model_name"> =>
    new Counter({ name, help, labelNames, registers: [registry] });
  gauge(
    "vllm:num_requests_running",
    "Number of requests in model execution batches.",
    (m) => m.scheduler.activeSequences,
  );
  gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", (m) => m.scheduler.queueDepth);
  gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", (m) => kvRatio(m.engine.stats().kv));
  const ttft = histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", VLLM_TTFT);
  const tpot = histogram(
    "vllm:time_per_output_token_seconds",
    "Histogram of time per output token in seconds.",
    VLLM_TPOT,
  );
  const e2e = histogram(
    "vllm:e2e_request_latency_seconds",
    "Histogram of e2e request latency in seconds.",
    VLLM_REQUEST,
  );
  const queue = histogram(
    "vllm:request_queue_time_seconds",
    "Histogram of time spent in WAITING phase for request.",
    VLLM_REQUEST,
  );
  const prompt = counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.");
  const gen = counter("vllm:generation_tokens_total", "Number of generation tokens processed.");
  const success = new Counter({
    name: "vllm:request_success_total",
    help: "Count of successfully processed requests.",
    labelNames: ["model_name", "finished_reason"],
    registers: [registry],
  });
  return (id) => {
    const labels = { model_name: id };
    return {
      firstToken: (s) => ttft.observe(labels, s),
      interToken: (s) => tpot.observe(labels, s),
      finished: (p, c, reason) => {
        prompt.inc(labels, p);
        gen.inc(labels, c);
        if (reason === "stop" || reason === "length") success.inc({ ...labels, finished_reason: reason });
      },
      queued: (s) => queue.observe(labels, s),
      ended: (s) => e2e.observe(labels, s),
    };
  };
}

/** llama-server's names (its /metrics with --metrics), summed over the models in memory. */
function llamacppMetrics(registry: Registry, loaded: () => readonly ModelInstance[]): SchedulerObserver {
  const { Counter, Gauge } = prom();
  const sums = loadedSums(loaded);
  const gauge = (name: string, help: string, read: () => number): void =>
    void new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  const prompt = new Counter({
    name: "llamacpp:prompt_tokens_total",
    help: "Number of prompt tokens processed.",
    registers: [registry],
  });
  const predicted = new Counter({
    name: "llamacpp:tokens_predicted_total",
    help: "Number of generation tokens processed.",
    registers: [registry],
  });
  gauge("llamacpp:requests_processing", "Number of requests processing.", () =>
    sums.scheduler((s) => s.activeSequences),
  );
  gauge("llamacpp:requests_deferred", "Number of requests deferred.", () => sums.scheduler((s) => s.queueDepth));
  gauge("llamacpp:kv_cache_usage_ratio", "KV-cache usage. 1 means 100 percent usage.", () =>
    kvRatio({
      pageSize: 0,
      pagesTotal: sums.stats((s) => s.kv.pagesTotal),
      pagesInUse: sums.stats((s) => s.kv.pagesInUse),
      pagesReserved: 0,
    }),
  );
  gauge("llamacpp:kv_cache_tokens", "KV-cache tokens.", () => sums.scheduler((s) => s.kvTokens));
  return {
    firstToken: () => {},
    interToken: () => {},
    finished: (p, c) => {
      prompt.inc(p);
      predicted.inc(c);
    },
  };
}

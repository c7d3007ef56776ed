// The /metrics registry (prom-client, one Registry per server): request and token counters, latency
// histograms fed by the scheduler, and gauges read from the scheduler and engine at scrape time.
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { ServeEngine } from "./engine.js";
import type { SchedulerObserver, ServeScheduler } from "./scheduler.js";

/** The server's metrics: a registry to scrape and the hooks that feed it. */
export interface ServerMetrics {
  /** The registry (`metrics()` gives the Prometheus text, `contentType` its media type). */
  readonly registry: Registry;
  /** Counts a finished HTTP request by endpoint and status. */
  request(endpoint: string, status: number): void;
  /** The observer to give the scheduler. */
  readonly observer: SchedulerObserver;
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** A counter that follows a monotone count kept elsewhere, read at scrape time. */
function counterOf(registry: Registry, name: string, help: string, read: () => number): void {
  let seen = 0;
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const now = read();
      if (now > seen) this.inc(now - seen);
      seen = Math.max(seen, now);
    },
  });
}

/** Metric names other servers expose, for dashboards built on them: vLLM's `vllm:*`, llama.cpp's `llamacpp:*`. */
export type MetricsCompat = "vllm" | "llamacpp";

/** Options of the server's Prometheus metrics (its `/metrics` names and labels). */
export interface MetricsOptions {
  /** The served model id (vLLM labels its metrics `model_name`). */
  readonly modelId?: string;
  /** Also expose these servers' metric names (default none). */
  readonly compat?: readonly MetricsCompat[];
}

/** vLLM's buckets for time to first token and per output token, and for request latency and queue time. */
const VLLM_TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
const VLLM_TPOT = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
const VLLM_REQUEST = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];
const REQUEST_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/** Builds the metrics of one server over its engine and scheduler (gauges are read when scraped). */
export function createMetrics(
  engine: ServeEngine,
  scheduler: () => ServeScheduler,
  options: MetricsOptions = {},
): ServerMetrics {
  const registry = new Registry();
  const e2e = new Histogram({
    name: "poot_e2e_request_latency_seconds",
    help: "Seconds from a generation's arrival to its end (finished, cancelled or failed)",
    buckets: REQUEST_BUCKETS,
    registers: [registry],
  });
  const queueTime = new Histogram({
    name: "poot_queue_time_seconds",
    help: "Seconds a generation waited in the queue before joining the batch",
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const compat = compatMetrics(registry, engine, scheduler, options);
  const requests = new Counter({
    name: "poot_requests_total",
    help: "HTTP requests by endpoint and status code",
    labelNames: ["endpoint", "status"],
    registers: [registry],
  });
  const promptTokens = new Counter({
    name: "poot_prompt_tokens_total",
    help: "Prompt tokens of finished or cancelled generations",
    registers: [registry],
  });
  const genTokens = new Counter({
    name: "poot_generation_tokens_total",
    help: "Tokens generated",
    registers: [registry],
  });
  const finished = new Counter({
    name: "poot_generations_total",
    help: "Generations (choices) ended, by reason",
    labelNames: ["reason"],
    registers: [registry],
  });
  const ttft = new Histogram({
    name: "poot_time_to_first_token_seconds",
    help: "Seconds from a request's arrival to its first token",
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const itl = new Histogram({
    name: "poot_inter_token_latency_seconds",
    help: "Seconds between consecutive tokens of one sequence",
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  new Gauge({
    name: "poot_queue_depth",
    help: "Requests waiting for a batch slot",
    registers: [registry],
    collect() {
      this.set(scheduler().queueDepth);
    },
  });
  new Gauge({
    name: "poot_active_sequences",
    help: "Sequences in the running decode batch",
    registers: [registry],
    collect() {
      this.set(scheduler().activeSequences);
    },
  });
  new Gauge({
    name: "poot_kv_tokens_in_use",
    help: "Tokens held in the KV caches of active sequences",
    registers: [registry],
    collect() {
      this.set(scheduler().kvTokens);
    },
  });
  // KV pages come from the engine's own pool allocator, so a page a sequence failed to give back shows here.
  new Gauge({
    name: "poot_kv_pages_in_use",
    help: "KV cache pages held by sequences (from the engine's page pool)",
    registers: [registry],
    collect() {
      this.set(engine.stats().kv.pagesInUse);
    },
  });
  new Gauge({
    name: "poot_kv_pages_reserved",
    help: "KV cache pages promised to admitted sequences and not yet filled",
    registers: [registry],
    collect() {
      this.set(engine.stats().kv.pagesReserved);
    },
  });
  new Gauge({
    name: "poot_kv_pages_total",
    help: "KV cache pages in the engine's pool",
    registers: [registry],
    collect() {
      this.set(engine.stats().kv.pagesTotal);
    },
  });
  new Gauge({
    name: "poot_kv_page_tokens",
    help: "Tokens per KV cache page",
    registers: [registry],
    collect() {
      this.set(engine.stats().kv.pageSize);
    },
  });
  new Gauge({
    name: "poot_engine_open_sequences",
    help: "Sequences whose KV state the engine holds (its own count)",
    registers: [registry],
    collect() {
      this.set(engine.stats().openSequences);
    },
  });
  counterOf(registry, "poot_compiles_total", "Programs compiled (staged) by the engine", () => engine.stats().compiles);
  // The prefix cache (decision 2704; all 0 when it is off).
  counterOf(
    registry,
    "poot_prefix_cache_hits_total",
    "Generations whose prompt began with cached KV pages",
    () => engine.stats().prefixCache?.hits ?? 0,
  );
  counterOf(
    registry,
    "poot_prefix_cache_hit_tokens_total",
    "Prompt tokens whose KV came from the prefix cache",
    () => engine.stats().prefixCache?.hitTokens ?? 0,
  );
  counterOf(
    registry,
    "poot_prefix_cache_evictions_total",
    "KV pages evicted from the prefix cache",
    () => engine.stats().prefixCache?.evictions ?? 0,
  );
  new Gauge({
    name: "poot_prefix_cache_pages",
    help: "KV pages the prefix cache holds",
    registers: [registry],
    collect() {
      this.set(engine.stats().prefixCache?.pages ?? 0);
    },
  });
  counterOf(registry, "poot_engine_steps_total", "Batched engine steps run", () => scheduler().stepCount);
  // Blocks across devices (decisions 1700-1704): residual hand-offs and the weight pager (0 without them).
  counterOf(
    registry,
    "poot_block_handoffs_total",
    "Residual-stream hand-offs between devices",
    () => engine.stats().blocks?.handoffs ?? 0,
  );
  counterOf(
    registry,
    "poot_pager_page_ins_total",
    "Blocks paged in by the weight pager",
    () => engine.stats().blocks?.pageIns ?? 0,
  );
  counterOf(
    registry,
    "poot_pager_page_in_bytes_total",
    "Weight bytes read by page-ins",
    () => engine.stats().blocks?.pageInBytes ?? 0,
  );
  counterOf(
    registry,
    "poot_pager_page_outs_total",
    "Blocks paged out by the weight pager",
    () => engine.stats().blocks?.pageOuts ?? 0,
  );
  counterOf(
    registry,
    "poot_pager_stall_seconds_total",
    "Seconds steps spent on page-ins (new executor, staging, State, weight reads or waits for weights read ahead)",
    () => engine.stats().blocks?.stallSeconds ?? 0,
  );
  counterOf(
    registry,
    "poot_pager_prefetched_bytes_total",
    "Weight bytes read ahead of use while the block before ran",
    () => engine.stats().blocks?.prefetchedBytes ?? 0,
  );
  new Gauge({
    name: "poot_device_bytes",
    help: "Device bytes held by the engine, by purpose",
    labelNames: ["kind"],
    registers: [registry],
    collect() {
      const b = engine.stats().deviceBytes;
      for (const kind of ["weights", "state", "io", "total"] as const) this.set({ kind }, b[kind]);
    },
  });
  return {
    registry,
    request: (endpoint, status) => requests.inc({ endpoint, status: String(status) }),
    observer: {
      firstToken: (s) => {
        ttft.observe(s);
        for (const m of compat) m.firstToken(s);
      },
      interToken: (s) => {
        itl.observe(s);
        for (const m of compat) m.interToken(s);
      },
      finished: (p, c, reason) => {
        promptTokens.inc(p);
        genTokens.inc(c);
        finished.inc({ reason });
        for (const m of compat) m.finished(p, c, reason);
      },
      queued: (s) => {
        queueTime.observe(s);
        for (const m of compat) m.queued?.(s);
      },
      ended: (s) => {
        e2e.observe(s);
        for (const m of compat) m.ended?.(s);
      },
    },
  };
}

/** The compatibility metrics asked for, each as an observer fed alongside the server's own. */
function compatMetrics(
  registry: Registry,
  engine: ServeEngine,
  scheduler: () => ServeScheduler,
  options: MetricsOptions,
): SchedulerObserver[] {
  const out: SchedulerObserver[] = [];
  const kvRatio = (): number => {
    const kv = engine.stats().kv;
    return kv.pagesTotal === 0 ? 0 : kv.pagesInUse / kv.pagesTotal;
  };
  if (options.compat?.includes("vllm") === true) {
    // vLLM's names and label (model_name), as its Grafana dashboard queries them.
    const labels = { model_name: options.modelId ?? "" };
    const labelNames = ["model_name"] as const;
    const gauge = (name: string, help: string, read: () => number): void =>
      void new Gauge({
        name,
        help,
        labelNames,
        registers: [registry],
        collect() {
          this.set(labels, read());
        },
      });
    const histogram = (name: string, help: string, buckets: number[]): Histogram<"model_name"> =>
      new Histogram({ name, help, labelNames, buckets, registers: [registry] });
    const counter = (name: string, help: string): Counter<"model_name"> =>
      new Counter({ name, help, labelNames, registers: [registry] });
    gauge(
      "vllm:num_requests_running",
      "Number of requests in model execution batches.",
      () => scheduler().activeSequences,
    );
    gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", () => scheduler().queueDepth);
    gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", kvRatio);
    const ttft = histogram(
      "vllm:time_to_first_token_seconds",
      "Histogram of time to first token in seconds.",
      VLLM_TTFT,
    );
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
    out.push({
      firstToken: (s) => ttft.observe(labels, s),
      interToken: (s) => tpot.observe(labels, s),
      finished: (p, c, reason) => {
        prompt.inc(labels, p);
        gen.inc(labels, c);
        if (reason === "stop" || reason === "length") success.inc({ ...labels, finished_reason: reason });
      },
      queued: (s) => queue.observe(labels, s),
      ended: (s) => e2e.observe(labels, s),
    });
  }
  if (options.compat?.includes("llamacpp") === true) {
    // llama-server's names (its /metrics with --metrics).
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
    gauge("llamacpp:requests_processing", "Number of requests processing.", () => scheduler().activeSequences);
    gauge("llamacpp:requests_deferred", "Number of requests deferred.", () => scheduler().queueDepth);
    gauge("llamacpp:kv_cache_usage_ratio", "KV-cache usage. 1 means 100 percent usage.", kvRatio);
    gauge("llamacpp:kv_cache_tokens", "KV-cache tokens.", () => scheduler().kvTokens);
    out.push({
      firstToken: () => {},
      interToken: () => {},
      finished: (p, c) => {
        prompt.inc(p);
        predicted.inc(c);
      },
    });
  }
  return out;
}

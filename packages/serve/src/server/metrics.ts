// The /metrics registry (prom-client, one Registry per server): request and token counters, latency
// histograms fed by the scheduler, and gauges read from the scheduler and engine at scrape time.
import type { Counter, Registry } from "prom-client";
import { prom } from "./deps.js";
import { compatMetrics, loadedSums } from "./metrics-compat.js";
import type { ModelInstance, ModelPoolObserver } from "./model-pool.js";
import type { SchedulerObserver, ServeScheduler } from "./scheduler-api.js";

/** The server's metrics: a registry to scrape and the hooks that feed it. */
export interface ServerMetrics {
  /** The registry (`metrics()` gives the Prometheus text, `contentType` its media type). */
  readonly registry: Registry;
  /** Counts a finished HTTP request by endpoint and status. */
  request(endpoint: string, status: number): void;
  /** The observer to give the scheduler of model `id` (its compat metrics carry its id as a label). */
  observerFor(id: string): SchedulerObserver;
  /** The observer of model loads and unloads (the `poot_model_*` metrics). */
  readonly models: ModelPoolObserver;
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Counters that follow monotone counts kept by each loaded model's engine or scheduler, read at scrape time and
 * once more when a model is unloaded (so its last counts are kept after its engine is gone).
 */
class FollowedCounters {
  private readonly list: { readonly counter: Counter; readonly read: (m: ModelInstance) => number }[] = [];
  private readonly seen = new WeakMap<Counter, WeakMap<ModelInstance, number>>();

  constructor(
    private readonly registry: Registry,
    private readonly loaded: () => readonly ModelInstance[],
  ) {}

  /** Adds the counter `name` following `read` of each loaded model. */
  add(name: string, help: string, read: (m: ModelInstance) => number): void {
    const follow = (counter: Counter, m: ModelInstance): void => this.follow(counter, m, read);
    const loaded = this.loaded;
    const counter: Counter = new (prom().Counter)({
      name,
      help,
      registers: [this.registry],
      collect() {
        for (const m of loaded()) follow(counter, m);
      },
    });
    this.seen.set(counter, new WeakMap());
    this.list.push({ counter, read });
  }

  /** Takes the last counts of a model about to be unloaded. */
  retire(m: ModelInstance): void {
    for (const { counter, read } of this.list) this.follow(counter, m, read);
  }

  private follow(counter: Counter, m: ModelInstance, read: (m: ModelInstance) => number): void {
    const seen = this.seen.get(counter)!;
    const was = seen.get(m) ?? 0;
    const now = read(m);
    if (now > was) counter.inc(now - was);
    seen.set(m, Math.max(was, now));
  }
}

/** Metric names other servers expose, for dashboards built on them: vLLM's `vllm:*`, llama.cpp's `llamacpp:*`. */
export type MetricsCompat = "vllm" | "llamacpp";

/** Options of the server's Prometheus metrics (its `/metrics` names and labels). */
export interface MetricsOptions {
  /** The served model ids (vLLM labels its metrics `model_name`; `poot_model_loaded` lists each). */
  readonly modelIds?: readonly string[];
  /** Also expose these servers' metric names (default none). */
  readonly compat?: readonly MetricsCompat[];
}

const REQUEST_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/**
 * Builds the metrics of one server over its loaded models' engines and schedulers (gauges and engine counters are
 * summed over the models in memory when scraped; the model counters are labelled by model id).
 */
export function createMetrics(loaded: () => readonly ModelInstance[], options: MetricsOptions = {}): ServerMetrics {
  const { Counter, Gauge, Histogram, Registry } = prom();
  const registry = new Registry();
  const sums = loadedSums(loaded);
  const followed = new FollowedCounters(registry, loaded);
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
  const compatObservers = compatMetrics(registry, loaded, options.compat ?? []);
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
      this.set(sums.scheduler((s) => s.queueDepth));
    },
  });
  new Gauge({
    name: "poot_active_sequences",
    help: "Sequences in the running decode batch",
    registers: [registry],
    collect() {
      this.set(sums.scheduler((s) => s.activeSequences));
    },
  });
  new Gauge({
    name: "poot_kv_tokens_in_use",
    help: "Tokens held in the KV caches of active sequences",
    registers: [registry],
    collect() {
      this.set(sums.scheduler((s) => s.kvTokens));
    },
  });
  // KV pages come from the engine's own pool allocator, so a page a sequence failed to give back shows here.
  new Gauge({
    name: "poot_kv_pages_in_use",
    help: "KV cache pages held by sequences (from the engine's page pool)",
    registers: [registry],
    collect() {
      this.set(sums.stats((s) => s.kv.pagesInUse));
    },
  });
  new Gauge({
    name: "poot_kv_pages_reserved",
    help: "KV cache pages promised to admitted sequences and not yet filled",
    registers: [registry],
    collect() {
      this.set(sums.stats((s) => s.kv.pagesReserved));
    },
  });
  new Gauge({
    name: "poot_kv_pages_total",
    help: "KV cache pages in the engine's pool",
    registers: [registry],
    collect() {
      this.set(sums.stats((s) => s.kv.pagesTotal));
    },
  });
  new Gauge({
    name: "poot_kv_page_tokens",
    help: "Tokens per KV cache page",
    registers: [registry],
    collect() {
      // Models may differ: the largest page.
      this.set(Math.max(0, ...loaded().map((m) => m.engine.stats().kv.pageSize)));
    },
  });
  new Gauge({
    name: "poot_engine_open_sequences",
    help: "Sequences whose KV state the engine holds (its own count)",
    registers: [registry],
    collect() {
      this.set(sums.stats((s) => s.openSequences));
    },
  });
  followed.add("poot_compiles_total", "Programs compiled (staged) by the engine", (m) => m.engine.stats().compiles);
  // The prefix cache (decision 2704; all 0 when it is off).
  followed.add(
    "poot_prefix_cache_hits_total",
    "Generations whose prompt began with cached KV pages",
    (m) => m.engine.stats().prefixCache?.hits ?? 0,
  );
  followed.add(
    "poot_prefix_cache_hit_tokens_total",
    "Prompt tokens whose KV came from the prefix cache",
    (m) => m.engine.stats().prefixCache?.hitTokens ?? 0,
  );
  followed.add(
    "poot_prefix_cache_evictions_total",
    "KV pages evicted from the prefix cache",
    (m) => m.engine.stats().prefixCache?.evictions ?? 0,
  );
  new Gauge({
    name: "poot_prefix_cache_pages",
    help: "KV pages the prefix cache holds",
    registers: [registry],
    collect() {
      this.set(sums.stats((s) => s.prefixCache?.pages ?? 0));
    },
  });
  followed.add("poot_engine_steps_total", "Batched engine steps run", (m) => m.scheduler.stepCount);
  // Blocks across devices (decisions 1700-1704): residual hand-offs and the weight pager (0 without them).
  followed.add(
    "poot_block_handoffs_total",
    "Residual-stream hand-offs between devices",
    (m) => m.engine.stats().blocks?.handoffs ?? 0,
  );
  followed.add(
    "poot_pager_page_ins_total",
    "Blocks paged in by the weight pager",
    (m) => m.engine.stats().blocks?.pageIns ?? 0,
  );
  followed.add(
    "poot_pager_page_in_bytes_total",
    "Weight bytes read by page-ins",
    (m) => m.engine.stats().blocks?.pageInBytes ?? 0,
  );
  followed.add(
    "poot_pager_page_outs_total",
    "Blocks paged out by the weight pager",
    (m) => m.engine.stats().blocks?.pageOuts ?? 0,
  );
  followed.add(
    "poot_pager_stall_seconds_total",
    "Seconds steps spent on page-ins (new executor, staging, State, weight reads or waits for weights read ahead)",
    (m) => m.engine.stats().blocks?.stallSeconds ?? 0,
  );
  followed.add(
    "poot_pager_prefetched_bytes_total",
    "Weight bytes read ahead of use while the block before ran",
    (m) => m.engine.stats().blocks?.prefetchedBytes ?? 0,
  );
  new Gauge({
    name: "poot_device_bytes",
    help: "Device bytes held by the engine, by purpose",
    labelNames: ["kind"],
    registers: [registry],
    collect() {
      for (const kind of ["weights", "state", "io", "total"] as const)
        this.set(
          { kind },
          sums.stats((s) => s.deviceBytes[kind]),
        );
    },
  });
  const models = modelMetrics(registry, loaded, options.modelIds ?? []);
  const observerFor = (id: string): SchedulerObserver => {
    const compat = compatObservers(id);
    return {
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
    };
  };
  return {
    registry,
    request: (endpoint, status) => requests.inc({ endpoint, status: String(status) }),
    observerFor,
    models: {
      loaded: models.loaded,
      unloading: (m) => {
        followed.retire(m);
        models.unloading(m);
      },
    },
  };
}

/** `poot_model_*`: each model's loads, unloads, load seconds and whether it is in memory, by model id. */
function modelMetrics(
  registry: Registry,
  loaded: () => readonly ModelInstance[],
  ids: readonly string[],
): ModelPoolObserver {
  const { Counter, Gauge, Histogram } = prom();
  const labelNames = ["model"] as const;
  const loads = new Counter({ name: "poot_model_loads_total", help: "Model loads", labelNames, registers: [registry] });
  const unloads = new Counter({
    name: "poot_model_unloads_total",
    help: "Model unloads (least-recently-used, to fit the memory budget)",
    labelNames,
    registers: [registry],
  });
  const seconds = new Histogram({
    name: "poot_model_load_seconds",
    help: "Seconds a model took to load",
    labelNames,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  });
  new Gauge({
    name: "poot_model_loaded",
    help: "Whether the model is in memory (1) or not (0)",
    labelNames,
    registers: [registry],
    collect() {
      const now = new Set(loaded().map((m) => m.id));
      for (const model of ids) this.set({ model }, now.has(model) ? 1 : 0);
    },
  });
  for (const model of ids) {
    loads.inc({ model }, 0);
    unloads.inc({ model }, 0);
  }
  return {
    loaded: (model, s) => {
      loads.inc({ model });
      seconds.observe({ model }, s);
    },
    unloading: (m) => unloads.inc({ model: m.id }),
  };
}

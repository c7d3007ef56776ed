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

/** Builds the metrics of one server over its engine and scheduler (gauges are read when scraped). */
export function createMetrics(engine: ServeEngine, scheduler: () => ServeScheduler): ServerMetrics {
  const registry = new Registry();
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
      firstToken: (s) => ttft.observe(s),
      interToken: (s) => itl.observe(s),
      finished: (p, c, reason) => {
        promptTokens.inc(p);
        genTokens.inc(c);
        finished.inc({ reason });
      },
    },
  };
}

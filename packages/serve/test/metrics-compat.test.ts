// /metrics with --metrics-compat vllm,llamacpp, read by an independent Prometheus text parser from npm
// (parse-prometheus-text-format, a port of the Prometheus Python client's parser, as Grafana's data source would
// read it): vLLM's names and types with its model_name label, llama.cpp's names, and poot's own e2e latency and
// queue-time histograms, each moved by exactly what the requests did (usage from the openai client).
import parsePrometheusTextFormat, { type MetricFamily } from "parse-prometheus-text-format";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
// @ts-expect-error: a plain ES module shared with the engine-worker tests (no declarations).
import { pacedEvalExecutor } from "./executors.mjs";
import { LLAMA3, LLAMA3_TEMPLATE, SKIP_NOTE, startTestServer, waitFor, type TestServer } from "./server-helpers.js";

const M = "llama3";

async function scrape(url: string): Promise<Map<string, MetricFamily>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
}

/** The value of a counter or gauge sample with these labels. */
function value(fams: Map<string, MetricFamily>, name: string, labels: Record<string, string> = {}): number {
  const f = fams.get(name);
  if (f === undefined) throw new Error(`${name} is not exposed`);
  const m = f.metrics.find((x) => Object.entries(labels).every(([k, v]) => x.labels?.[k] === v));
  return Number(m?.value ?? 0);
}

/** Observations in a histogram (its +Inf bucket). */
function observations(fams: Map<string, MetricFamily>, name: string): number {
  const f = fams.get(name);
  if (f === undefined) throw new Error(`${name} is not exposed`);
  expect(f.type).toBe("HISTOGRAM");
  return f.metrics.reduce((n, m) => n + Number(m.buckets?.["+Inf"] ?? 0), 0);
}

describe.skipIf(LLAMA3 === null)(`--metrics-compat vllm,llamacpp${SKIP_NOTE}`, { timeout: 180_000 }, () => {
  let s: TestServer;
  let plain: TestServer;
  beforeAll(async () => {
    s = await startTestServer(LLAMA3!, {
      context: 64,
      chatTemplate: LLAMA3_TEMPLATE,
      maxBatch: 1,
      metricsCompat: ["vllm", "llamacpp"],
      // Paced steps: a streamed generation is still running while the gauge test queues a second one.
      executor: () => pacedEvalExecutor(15),
    });
    plain = await startTestServer(LLAMA3!, { context: 64, maxBatch: 1 });
  }, 180_000);
  afterAll(async () => {
    await s?.close();
    await plain?.close();
  });

  test("vLLM's and llama.cpp's names parse, with their types, and count exactly what was served", async () => {
    let prompt = 0,
      gen = 0;
    for (const max of [3, 5, 7]) {
      const r = await s.client.completions.create({
        model: M,
        prompt: "hello there",
        max_tokens: max,
        ignore_eos: true,
      } as never);
      prompt += r.usage!.prompt_tokens;
      gen += r.usage!.completion_tokens;
    }
    const c = await s.client.chat.completions.create({
      model: M,
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 4,
      ignore_eos: true,
    } as never);
    prompt += c.usage!.prompt_tokens;
    gen += c.usage!.completion_tokens;
    const f = await scrape(s.url);
    const model = { model_name: M };
    const types: Record<string, string> = {
      "vllm:num_requests_running": "GAUGE",
      "vllm:num_requests_waiting": "GAUGE",
      "vllm:kv_cache_usage_perc": "GAUGE",
      "vllm:prompt_tokens_total": "COUNTER",
      "vllm:generation_tokens_total": "COUNTER",
      "vllm:request_success_total": "COUNTER",
      "vllm:time_to_first_token_seconds": "HISTOGRAM",
      "vllm:time_per_output_token_seconds": "HISTOGRAM",
      "vllm:e2e_request_latency_seconds": "HISTOGRAM",
      "vllm:request_queue_time_seconds": "HISTOGRAM",
      "llamacpp:prompt_tokens_total": "COUNTER",
      "llamacpp:tokens_predicted_total": "COUNTER",
      "llamacpp:requests_processing": "GAUGE",
      "llamacpp:requests_deferred": "GAUGE",
      "llamacpp:kv_cache_usage_ratio": "GAUGE",
      poot_e2e_request_latency_seconds: "HISTOGRAM",
      poot_queue_time_seconds: "HISTOGRAM",
    };
    for (const [name, type] of Object.entries(types)) expect(f.get(name)?.type, name).toBe(type);
    expect(value(f, "vllm:prompt_tokens_total", model)).toBe(prompt);
    expect(value(f, "vllm:generation_tokens_total", model)).toBe(gen);
    expect(value(f, "vllm:request_success_total", { ...model, finished_reason: "length" })).toBe(4);
    expect(value(f, "llamacpp:prompt_tokens_total")).toBe(prompt);
    expect(value(f, "llamacpp:tokens_predicted_total")).toBe(gen);
    for (const h of [
      "vllm:time_to_first_token_seconds",
      "vllm:e2e_request_latency_seconds",
      "vllm:request_queue_time_seconds",
      "poot_e2e_request_latency_seconds",
      "poot_queue_time_seconds",
    ])
      expect(observations(f, h), h).toBe(4);
    // One per token after the first of each request.
    expect(observations(f, "vllm:time_per_output_token_seconds")).toBe(gen - 4);
    expect(value(f, "vllm:num_requests_running", model)).toBe(0);
    expect(value(f, "vllm:num_requests_waiting", model)).toBe(0);
    expect(value(f, "vllm:kv_cache_usage_perc", model)).toBe(0);
    // Planted: the same server without the flag exposes none of those names (the check can fail).
    const bare = await scrape(plain.url);
    expect([...bare.keys()].filter((n) => n.includes(":"))).toEqual([]);
    expect(bare.has("poot_e2e_request_latency_seconds")).toBe(true);
  });

  test("running and waiting gauges follow a stream and a queued request", async () => {
    const stream = await s.client.completions.create({
      model: M,
      prompt: "a",
      max_tokens: 40,
      ignore_eos: true,
      stream: true,
    } as never);
    const it = (stream as unknown as AsyncIterable<unknown>)[Symbol.asyncIterator]();
    await it.next();
    const queued = s.client.completions.create({ model: M, prompt: "b", max_tokens: 2, ignore_eos: true } as never);
    await waitFor(async () => value(await scrape(s.url), "vllm:num_requests_waiting", { model_name: M }) === 1);
    const f = await scrape(s.url);
    expect(value(f, "vllm:num_requests_running", { model_name: M })).toBe(1);
    expect(value(f, "llamacpp:requests_deferred")).toBe(1);
    expect(value(f, "vllm:kv_cache_usage_perc", { model_name: M })).toBeGreaterThan(0);
    while (!(await it.next()).done);
    await queued;
    await waitFor(async () => value(await scrape(s.url), "vllm:num_requests_running", { model_name: M }) === 0);
  });
});

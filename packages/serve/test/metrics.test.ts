// /metrics and the request life cycle: the Prometheus text parses (an independent parser of the format),
// counters move by exactly what the requests did, and a client that disconnects mid-stream is cancelled
// with its sequence released (the runtime's own open-session count returns to zero).
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  LLAMA3,
  LLAMA3_TEMPLATE,
  SKIP_NOTE,
  metric,
  parsePrometheus,
  startTestServer,
  waitFor,
  type TestServer,
} from "./server-helpers.js";

const M = "llama3";

describe.skipIf(LLAMA3 === null)(`metrics and cancellation${SKIP_NOTE}`, { timeout: 180_000 }, () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(LLAMA3!, { context: 64, chatTemplate: LLAMA3_TEMPLATE, maxBatch: 4 });
  }, 180_000);
  afterAll(async () => s?.close(), 60_000);

  test("the parser rejects text that is not the exposition format (so the next test can fail)", () => {
    expect(() => parsePrometheus("poot_x{a=b} 1\n")).toThrow();
    expect(() => parsePrometheus("poot x 1\n")).toThrow();
    expect(() => parsePrometheus("# TYPE poot_x countr\n")).toThrow();
    expect(parsePrometheus('poot_x{a="1",b="q\\"x"} 2.5e3\n').samples).toEqual([
      { name: "poot_x", labels: { a: "1", b: 'q"x' }, value: 2500 },
    ]);
  });

  test("/metrics is Prometheus text with every documented family, typed", async () => {
    const res = await fetch(`${s.url}/metrics`);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const { types } = parsePrometheus(await res.text());
    const want: Record<string, string> = {
      poot_requests_total: "counter",
      poot_prompt_tokens_total: "counter",
      poot_generation_tokens_total: "counter",
      poot_time_to_first_token_seconds: "histogram",
      poot_inter_token_latency_seconds: "histogram",
      poot_queue_depth: "gauge",
      poot_active_sequences: "gauge",
      poot_kv_pages_in_use: "gauge",
      poot_compiles_total: "counter",
      poot_device_bytes: "gauge",
    };
    for (const [name, type] of Object.entries(want)) expect(types.get(name), name).toBe(type);
  });

  test("counters move by what the requests did; histograms count one TTFT per choice and one ITL per later token", async () => {
    const before = parsePrometheus(await (await fetch(`${s.url}/metrics`)).text()).samples;
    const get = (samples: typeof before, name: string, labels: Record<string, string> = {}) =>
      samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v))?.value ?? 0;
    const a = await s.client.completions.create({
      model: M,
      prompt: "one two",
      max_tokens: 5,
      ignore_eos: true,
    } as never);
    const b = await s.client.chat.completions.create({
      model: M,
      messages: [{ role: "user", content: "three" }],
      max_tokens: 4,
      n: 2,
      ignore_eos: true,
    } as never);
    // A streamed request (its reply is hijacked for SSE) is counted like the others.
    const c = await s.client.chat.completions.create({
      model: M,
      messages: [{ role: "user", content: "four" }],
      max_tokens: 3,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    } as never);
    let uc = { prompt_tokens: 0, completion_tokens: 0 };
    for await (const chunk of c as unknown as AsyncIterable<{ usage?: typeof uc }>) if (chunk.usage) uc = chunk.usage;
    expect(uc.completion_tokens).toBe(3);
    // The response hook runs once the reply has ended, which can trail the client's last read by a moment.
    let after = before;
    const chat200 = { endpoint: "/v1/chat/completions", status: "200" };
    await waitFor(async () => {
      after = parsePrometheus(await (await fetch(`${s.url}/metrics`)).text()).samples;
      return get(after, "poot_requests_total", chat200) - get(before, "poot_requests_total", chat200) >= 2;
    }, 10_000);
    const d = (name: string, labels: Record<string, string> = {}) =>
      get(after, name, labels) - get(before, name, labels);
    const ua = (a as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
    const ub = (b as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
    expect(ua.completion_tokens).toBe(5);
    expect(ub.completion_tokens).toBe(8);
    expect(d("poot_requests_total", { endpoint: "/v1/completions", status: "200" })).toBe(1);
    expect(d("poot_requests_total", { endpoint: "/v1/chat/completions", status: "200" })).toBe(2);
    expect(d("poot_generation_tokens_total")).toBe(16);
    // Prompt tokens are counted per choice (the chat prompt ran twice, once per choice's sequence).
    expect(d("poot_prompt_tokens_total")).toBe(ua.prompt_tokens + 2 * ub.prompt_tokens + uc.prompt_tokens);
    expect(d("poot_time_to_first_token_seconds_count")).toBe(4);
    expect(d("poot_inter_token_latency_seconds_count")).toBe(16 - 4);
    // Histogram buckets are cumulative and end at the count.
    const buckets = after.filter((x) => x.name === "poot_inter_token_latency_seconds_bucket");
    for (let i = 1; i < buckets.length; i++) expect(buckets[i]!.value).toBeGreaterThanOrEqual(buckets[i - 1]!.value);
    expect(buckets[buckets.length - 1]!.labels.le).toBe("+Inf");
    expect(buckets[buckets.length - 1]!.value).toBe(get(after, "poot_inter_token_latency_seconds_count"));
    expect(get(after, "poot_compiles_total")).toBe(s.engine.stats.programsStaged);
    expect(get(after, "poot_device_bytes", { kind: "total" })).toBe(s.engine.executor.deviceBytes().total);
    expect(get(after, "poot_device_bytes", { kind: "weights" })).toBeGreaterThan(0);
  });

  test("while a stream runs its sequence shows in active sequences and KV pages; a client that disconnects frees it", async () => {
    const cancelled = await metric(s.url, "poot_generations_total", { reason: "cancelled" });
    const generated = await metric(s.url, "poot_generation_tokens_total");
    const stream = await s.client.completions.create({
      model: M,
      prompt: "keep going",
      max_tokens: 50,
      ignore_eos: true,
      stream: true,
    } as never);
    let chunks = 0;
    for await (const _ of stream as unknown as AsyncIterable<unknown>) {
      if (++chunks < 3) continue;
      expect(await metric(s.url, "poot_active_sequences")).toBe(1);
      expect(await metric(s.url, "poot_engine_open_sequences")).toBe(1);
      // One scrape, so tokens and pages are read between the same two steps.
      const { samples } = parsePrometheus(await (await fetch(`${s.url}/metrics`)).text());
      const tokens = samples.find((x) => x.name === "poot_kv_tokens_in_use")!.value;
      expect(tokens).toBeGreaterThan(3);
      expect(samples.find((x) => x.name === "poot_kv_pages_in_use")!.value).toBe(Math.ceil(tokens / 16));
      // Leaving the loop aborts the client's request: the connection closes mid-stream.
      break;
    }
    await waitFor(async () => (await metric(s.url, "poot_engine_open_sequences")) === 0);
    expect(s.engine.openSessions).toBe(0);
    expect(await metric(s.url, "poot_active_sequences")).toBe(0);
    expect(await metric(s.url, "poot_kv_pages_in_use")).toBe(0);
    expect(await metric(s.url, "poot_generations_total", { reason: "cancelled" })).toBe(cancelled + 1);
    // It stopped early: far fewer than the 50 tokens asked for were generated.
    expect((await metric(s.url, "poot_generation_tokens_total")) - generated).toBeLessThan(40);
  });

  test("a non-streamed request whose client goes away is cancelled too", async () => {
    const abort = new AbortController();
    const p = s.client.completions.create({ model: M, prompt: "long", max_tokens: 50, ignore_eos: true } as never, {
      signal: abort.signal,
    });
    await waitFor(async () => (await metric(s.url, "poot_active_sequences")) === 1);
    const cancelled = await metric(s.url, "poot_generations_total", { reason: "cancelled" });
    abort.abort();
    await expect(p).rejects.toThrow();
    await waitFor(async () => (await metric(s.url, "poot_engine_open_sequences")) === 0);
    expect(await metric(s.url, "poot_generations_total", { reason: "cancelled" })).toBe(cancelled + 1);
    expect(await metric(s.url, "poot_active_sequences")).toBe(0);
  });

  test("/health reports the model and queue", async () => {
    const h = (await (await fetch(`${s.url}/health`)).json()) as Record<string, unknown>;
    expect(h).toEqual({ status: "ok", model: M, active_sequences: 0, queue_depth: 0 });
  });
});

// Admission tells the truth (issue #20), each case through a real socket on the demo model: a request that can
// never fit is a 400 naming the field and the limit (never a 429 a client would retry); a full queue is a 429 with
// Retry-After; a request waiting past the queue timeout is a 503; chat's default max_tokens fits the KV cache;
// /health is 503 while draining; a chat over the context names `messages`. Every case runs twice: with the engine
// stepped on the HTTP thread, and on the engine worker thread `poot serve` uses (the answers must not differ).
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { rawRequest, type RawResponse } from "./raw-http.js";
import { DEMO, startTestServer, startWorkerServer, waitFor, type TestServer } from "./server-helpers.js";

/** The two ways the server runs its engine. */
const MODES: [string, typeof startTestServer | typeof startWorkerServer][] = [
  ["in process", startTestServer],
  ["on the engine worker", startWorkerServer],
];

const M = "demo";
const errorOf = (r: RawResponse): { code: string; param: string | null; message: string; type: string } =>
  JSON.parse(r.body).error;
const health = async (
  url: string,
): Promise<{ status: number; body: { status: string; active_sequences: number; queue_depth: number } }> => {
  const r = await rawRequest(url, "GET", "/health");
  return { status: r.status, body: JSON.parse(r.body) };
};

describe.each(MODES)("a small KV cache (2 pages of 16 tokens, context 64), %s", { timeout: 300_000 }, (_, start) => {
  let s: Pick<TestServer, "url" | "server" | "close">;
  beforeAll(async () => {
    s = await start(DEMO, { context: 64, maxBatch: 2, maxQueue: 4, kvPages: 2, pageSize: 16 });
  }, 120_000);
  afterAll(async () => s?.close());

  test("prompt + max_tokens past the KV cache: 400 naming max_tokens and the limit", async () => {
    const r = await rawRequest(s.url, "POST", "/v1/completions", {
      json: { model: M, prompt: [5, 6, 7, 8], max_tokens: 40 },
    });
    expect(r.status).toBe(400);
    expect(errorOf(r)).toMatchObject({
      code: "context_length_exceeded",
      param: "max_tokens",
      type: "invalid_request_error",
    });
    expect(errorOf(r).message).toContain("KV cache holds 32 tokens");
    expect(errorOf(r).message).toContain("at most 28");
  });

  test("chat without max_tokens: the default fits the KV cache (200, not a 503 about a max_tokens never sent)", async () => {
    const r = await rawRequest(s.url, "POST", "/v1/chat/completions", {
      json: { model: M, messages: [{ role: "user", content: "Tell me a fortune." }], temperature: 0, ignore_eos: true },
    });
    expect(r.status).toBe(200);
    const body = JSON.parse(r.body);
    expect(body.usage.prompt_tokens + body.usage.completion_tokens).toBe(32);
    expect(body.choices[0].finish_reason).toBe("length");
  });

  test("a chat over the context names messages", async () => {
    const r = await rawRequest(s.url, "POST", "/v1/chat/completions", {
      json: { model: M, messages: [{ role: "user", content: "word ".repeat(60) }] },
    });
    expect(r.status).toBe(400);
    expect(errorOf(r)).toMatchObject({ code: "context_length_exceeded", param: "messages" });
  });

  test("more generations than the queue holds: 400 naming prompt (5 prompts) or n (n = 5), with the limit", async () => {
    const prompts = await rawRequest(s.url, "POST", "/v1/completions", {
      json: { model: M, prompt: ["a", "b", "c", "d", "e"], max_tokens: 1 },
    });
    expect(prompts.status).toBe(400);
    expect(errorOf(prompts)).toMatchObject({ code: "too_many_generations", param: "prompt" });
    expect(errorOf(prompts).message).toContain("at most 4");
    const n = await rawRequest(s.url, "POST", "/v1/chat/completions", {
      json: { model: M, messages: [{ role: "user", content: "hi" }], n: 5, max_tokens: 1 },
    });
    expect(n.status).toBe(400);
    expect(errorOf(n)).toMatchObject({ code: "too_many_generations", param: "n" });
  });
});

describe.each(MODES)("one batch slot, a queue of one, no queue timeout, %s", { timeout: 300_000 }, (_, start) => {
  let s: Pick<TestServer, "url" | "server" | "close">;
  beforeAll(async () => {
    s = await start(DEMO, { context: 64, maxBatch: 1, maxQueue: 1, queueTimeoutMs: 0 });
  }, 120_000);
  afterAll(async () => s?.close());

  /** A generation that holds the only slot for a while (60 tokens past EOS). */
  const long = (): Promise<RawResponse> =>
    rawRequest(s.url, "POST", "/v1/completions", {
      json: { model: M, prompt: [5, 6], max_tokens: 60, ignore_eos: true },
    });

  /** Waits until only `a` runs: the slot is taken and nothing (left from an earlier test) waits. */
  const onlyOne = async (): Promise<void> =>
    waitFor(async () => {
      const h = (await health(s.url)).body;
      return h.active_sequences === 1 && h.queue_depth === 0;
    });

  test("full queue: 429 rate_limit_error with an integer Retry-After; the queued request still completes", async () => {
    const a = long();
    await onlyOne();
    const b = rawRequest(s.url, "POST", "/v1/completions", { json: { model: M, prompt: [7], max_tokens: 1 } });
    await waitFor(async () => (await health(s.url)).body.queue_depth === 1);
    const c = await rawRequest(s.url, "POST", "/v1/completions", { json: { model: M, prompt: [8], max_tokens: 1 } });
    expect(c.status).toBe(429);
    expect(errorOf(c)).toMatchObject({ code: "server_busy", type: "rate_limit_error" });
    expect(c.headers["retry-after"]).toMatch(/^[1-9]\d*$/);
    expect((await a).status).toBe(200);
    expect((await b).status).toBe(200);
  });

  test("draining: /health 503 status draining, new requests 503, the running one finishes", async () => {
    const a = long();
    await onlyOne();
    const drained = s.server.scheduler.drain(120_000);
    const h = await health(s.url);
    expect(h.status).toBe(503);
    expect(h.body.status).toBe("draining");
    const b = await rawRequest(s.url, "POST", "/v1/completions", { json: { model: M, prompt: [7], max_tokens: 1 } });
    expect(b.status).toBe(503);
    expect(errorOf(b).code).toBe("server_shutting_down");
    expect((await a).status).toBe(200);
    expect(await drained).toBe(true);
  });
});

describe.each(MODES)("one batch slot, a queue of one, a 1.5 s queue timeout, %s", { timeout: 300_000 }, (_, start) => {
  let s: Pick<TestServer, "url" | "server" | "close">;
  beforeAll(async () => {
    s = await start(DEMO, { context: 64, maxBatch: 1, maxQueue: 1, queueTimeoutMs: 1500 });
  }, 120_000);
  afterAll(async () => s?.close());

  /** A generation that holds the only slot for a while (60 tokens past EOS). */
  const long = (): Promise<RawResponse> =>
    rawRequest(s.url, "POST", "/v1/completions", {
      json: { model: M, prompt: [5, 6], max_tokens: 60, ignore_eos: true },
    });

  /** Waits until only `a` runs: the slot is taken and nothing (left from an earlier test) waits. */
  const onlyOne = async (): Promise<void> =>
    waitFor(async () => {
      const h = (await health(s.url)).body;
      return h.active_sequences === 1 && h.queue_depth === 0;
    });

  test("a request waiting past --queue-timeout: 503 queue_timeout, and the one running is unaffected", async () => {
    const a = long();
    await onlyOne();
    const t0 = performance.now();
    const b = await rawRequest(s.url, "POST", "/v1/completions", { json: { model: M, prompt: [7], max_tokens: 1 } });
    const waited = performance.now() - t0;
    const ra = await a;
    // Only meaningful when a was still running after 1.5 s (on a fast machine it may end first).
    if (b.status === 503) {
      expect(errorOf(b)).toMatchObject({ code: "queue_timeout", type: "server_error" });
      expect(waited).toBeGreaterThanOrEqual(1400);
    } else {
      expect(b.status).toBe(200);
    }
    expect(ra.status).toBe(200);
    console.log(`queue timeout: b answered ${b.status} after ${waited.toFixed(0)} ms`);
  });

  test("a streamed request that times out in the queue gets the 503 status too (headers wait for the first event)", async () => {
    const a = long();
    await onlyOne();
    const b = await rawRequest(s.url, "POST", "/v1/completions", {
      json: { model: M, prompt: [7], max_tokens: 1, stream: true },
    });
    const ra = await a;
    if (b.status === 503) expect(errorOf(b)).toMatchObject({ code: "queue_timeout" });
    else expect(b.body).toContain("data: [DONE]");
    expect([200, 503]).toContain(b.status);
    expect(ra.status).toBe(200);
    console.log(`queue timeout (stream): b answered ${b.status}`);
  });
});

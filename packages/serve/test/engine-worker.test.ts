// The engine on a worker thread (issue #20, decision 2004), through a real socket on the demo model: greedy answers
// equal @poot/models' own loop, admission answers as in process (400 never fits, 429 queue full, 503 queue timeout and
// draining), a client that disconnects frees its KV pages, a step failure fails that request only (500, one line), and
// a crashed worker fails the requests in flight, is logged once, and turns /health to 503 "failed".
import { LoadedModel, loadTokenizer } from "@poot/models";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { rawRequest } from "./raw-http.js";
import { DEMO, metric, startWorkerServer, waitFor, type WorkerTestServer } from "./server-helpers.js";

const M = "demo";
const health = async (url: string) => {
  const r = await rawRequest(url, "GET", "/health");
  return {
    status: r.status,
    body: JSON.parse(r.body) as { status: string; active_sequences: number; queue_depth: number },
  };
};

describe("the engine worker on the demo model", { timeout: 300_000 }, () => {
  let s: WorkerTestServer;
  beforeAll(async () => {
    s = await startWorkerServer(DEMO, { context: 64, maxBatch: 2, maxQueue: 2 });
  }, 120_000);
  afterAll(async () => s?.close());

  test("a greedy chat equals @poot/models' greedy loop; nothing held afterwards", async () => {
    const messages = [{ role: "user" as const, content: "Tell me a fortune about computers." }];
    const r = await s.client.chat.completions.create({ model: M, messages, max_tokens: 6, temperature: 0 });
    const tok = loadTokenizer(DEMO);
    const ids = tok.encode(tok.applyChatTemplate(messages));
    const m = LoadedModel.open(DEMO);
    try {
      const g = m.generate(ids, 6, m.config.eosTokenIds).ids.filter((id) => !m.config.eosTokenIds.includes(id));
      expect(r.choices[0]!.message.content).toBe(tok.decode(g, { skipSpecial: true }));
      expect(r.usage?.completion_tokens).toBe(g.length);
    } finally {
      m.close();
    }
    expect(await metric(s.url, "poot_kv_pages_in_use")).toBe(0);
    expect(await metric(s.url, "poot_engine_open_sequences")).toBe(0);
    expect(await metric(s.url, "poot_engine_steps_total")).toBeGreaterThan(0);
  });
});

describe("a client that disconnects, on the engine worker", { timeout: 300_000 }, () => {
  let s: WorkerTestServer;
  beforeAll(async () => {
    s = await startWorkerServer(DEMO, { context: 64, maxBatch: 2 });
  }, 120_000);
  afterAll(async () => s?.close());

  test("mid-stream: its sequence is cancelled on the worker and its KV pages return", async () => {
    const abort = new AbortController();
    const stream = (await s.client.completions.create(
      { model: M, prompt: [5, 6, 7], max_tokens: 60, ignore_eos: true, stream: true } as never,
      { signal: abort.signal },
    )) as unknown as AsyncIterable<unknown>;
    let seen = 0;
    try {
      for await (const _ of stream) {
        if (++seen === 1) {
          expect(await metric(s.url, "poot_kv_pages_in_use")).toBeGreaterThan(0);
          abort.abort();
        }
      }
    } catch {
      // the abort
    }
    await waitFor(
      async () =>
        (await metric(s.url, "poot_kv_pages_in_use")) === 0 &&
        (await metric(s.url, "poot_engine_open_sequences")) === 0,
    );
    expect(await metric(s.url, "poot_generations_total", { reason: "cancelled" })).toBe(1);
    expect((await health(s.url)).body).toMatchObject({ status: "ok", active_sequences: 0, queue_depth: 0 });
  });
});

describe("a step that throws on the worker", { timeout: 300_000 }, () => {
  let s: WorkerTestServer;
  beforeAll(async () => {
    s = await startWorkerServer(DEMO, { context: 64, maxBatch: 1, executorExport: "failingStepFactory" });
  }, 120_000);
  afterAll(async () => s?.close());

  test("fails that request with a one-line 500; the next request is served", async () => {
    const r = await rawRequest(s.url, "POST", "/v1/completions", {
      json: { model: M, prompt: [5, 6], max_tokens: 10, ignore_eos: true },
    });
    expect(r.status).toBe(500);
    const error = JSON.parse(r.body).error;
    expect(error).toMatchObject({ code: "internal_error", type: "server_error" });
    expect(error.message).toBe("the engine failed: planted step failure");
    const ok = await rawRequest(s.url, "POST", "/v1/completions", {
      json: { model: M, prompt: [5, 6], max_tokens: 2 },
    });
    expect(ok.status).toBe(200);
    expect((await health(s.url)).status).toBe(200);
    expect(await metric(s.url, "poot_kv_pages_in_use")).toBe(0);
  });
});

describe("a worker thread that crashes", { timeout: 300_000 }, () => {
  let s: WorkerTestServer;
  const logged: string[] = [];
  beforeAll(async () => {
    s = await startWorkerServer(DEMO, {
      context: 64,
      maxBatch: 1,
      executorExport: "crashingFactory",
      log: (line) => logged.push(line),
    });
  }, 120_000);
  afterAll(async () => s?.close());

  test("fails the requests in flight (500), is logged once, and /health turns 503 failed; new requests 503", async () => {
    const r = await rawRequest(s.url, "POST", "/v1/completions", {
      json: { model: M, prompt: [5, 6], max_tokens: 30, ignore_eos: true },
    });
    expect(r.status).toBe(500);
    const error = JSON.parse(r.body).error;
    expect(error.code).toBe("internal_error");
    expect(error.message).toMatch(/^the engine worker stopped \(exit code 1\): planted worker crash$/);
    expect(logged).toEqual([expect.stringMatching(/^poot serve: the engine worker stopped .*planted worker crash/)]);
    expect(logged[0]).not.toContain("\n");
    const h = await health(s.url);
    expect(h.status).toBe(503);
    expect(h.body.status).toBe("failed");
    const next = await rawRequest(s.url, "POST", "/v1/completions", { json: { model: M, prompt: [5], max_tokens: 1 } });
    expect(next.status).toBe(503);
    expect(JSON.parse(next.body).error.code).toBe("internal_error");
  });
});

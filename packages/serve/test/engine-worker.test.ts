// The engine on a worker thread (issue #20, decision 2004), through a real socket on the demo model: greedy answers
// equal @poot/models' own loop, admission answers as in process (400 never fits, 429 queue full, 503 queue timeout and
// draining), a client that disconnects frees its KV pages, a step failure fails that request only (500, one line), and
// a crashed worker fails the requests in flight, is logged once, and turns /health to 503 "failed"; /admin/place
// relocates blocks on the worker between steps (mid-stream, the unrelocated run's text).
import * as fs from "node:fs";
import * as path from "node:path";
import { LoadedModel, loadTokenizer } from "@poot/models";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { rawRequest } from "./raw-http.js";
import {
  DEMO,
  LLAMA3,
  SKIP_NOTE,
  llama3Tokenizer,
  metric,
  startWorkerServer,
  waitFor,
  type WorkerTestServer,
} from "./server-helpers.js";

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

describe("/admin/place on the engine worker", { timeout: 300_000 }, () => {
  let s: WorkerTestServer;
  beforeAll(async () => {
    s = await startWorkerServer(DEMO, { context: 64, maxBatch: 1 });
  }, 120_000);
  afterAll(async () => s?.close());

  test("a model run as one program: GET and POST answer the one-line 400, nothing moves", async () => {
    const get = await rawRequest(s.url, "GET", "/admin/place");
    expect(get.status).toBe(400);
    expect(JSON.parse(get.body).error).toMatchObject({ code: "invalid_placement", param: "place" });
    const post = await rawRequest(s.url, "POST", "/admin/place", { json: { place: "0-1:eval" } });
    expect(post.status).toBe(400);
    expect(JSON.parse(post.body).error.message).toMatch(/^this server runs the model as one program/);
  });
});

describe.skipIf(LLAMA3 === null)(
  `/admin/place relocating blocks on the engine worker${SKIP_NOTE}`,
  { timeout: 300_000 },
  () => {
    const KEY = "sk-admin-worker-0123456789";
    const N = 40;
    let s: WorkerTestServer;
    beforeAll(async () => {
      s = await startWorkerServer(LLAMA3!, {
        context: 64,
        maxBatch: 2,
        apiKey: KEY,
        executorExport: "namedEvalFactory",
        backend: "eval",
        place: "0:a,1:b",
        backends: ["a", "b"],
        modelId: "llama3",
      });
    }, 180_000);
    afterAll(async () => s?.close());

    const admin = async (body?: unknown) => {
      const r = await fetch(`${s.url}/admin/place`, {
        method: body === undefined ? "GET" : "POST",
        headers: {
          authorization: `Bearer ${KEY}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: r.status, json: (await r.json()) as Record<string, unknown> };
    };

    test("moved at token 5 and back at 10 mid-stream: the unrelocated run's text, transformers' greedy prefix", async () => {
      const ref = JSON.parse(fs.readFileSync(path.join(LLAMA3!, "reference.json"), "utf8")) as {
        prompt_ids: number[];
        greedy_ids: number[];
      };
      const body = { model: "llama3", prompt: ref.prompt_ids, max_tokens: N, temperature: 0, ignore_eos: true };
      const plain = (await s.client.completions.create(body as never)) as unknown as { choices: { text: string }[] };
      const unrelocated = plain.choices[0]!.text;
      expect(unrelocated.startsWith(llama3Tokenizer().decode(ref.greedy_ids, { skipSpecial: true }))).toBe(true);
      expect((await admin()).json).toMatchObject({ place: "0:a,1:b", relocations: 0 });
      const stream = (await s.client.completions.create({
        ...body,
        stream: true,
        logprobs: 0,
      } as never)) as unknown as AsyncIterable<{ choices: { text: string; logprobs?: { tokens?: string[] } }[] }>;
      let text = "",
        tokens = 0;
      const moves: Promise<void>[] = [];
      const move = (place: string) =>
        admin({ place }).then((r) => {
          expect(r.status, JSON.stringify(r.json)).toBe(200);
        });
      for await (const chunk of stream) {
        const c = chunk.choices[0];
        if (c === undefined) continue;
        text += c.text;
        tokens += c.logprobs?.tokens?.length ?? 0;
        if (tokens >= 5 && moves.length === 0) moves.push(move("0-1:b"));
        if (tokens >= 10 && moves.length === 1) {
          await moves[0];
          moves.push(move("0:a,1:b"));
        }
      }
      await Promise.all(moves);
      expect(tokens).toBe(N);
      expect(text).toBe(unrelocated);
      expect((await admin()).json).toMatchObject({ place: "0:a,1:b", relocations: 2 });
      const bad = await admin({ place: "0:a,1:tpu" });
      expect(bad.status).toBe(400);
      expect((bad.json["error"] as { message: string }).message).toMatch(/names device "tpu", which is not available/);
    });
  },
);

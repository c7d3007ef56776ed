// The prefix cache (--prefix-cache): KV pages of finished prompts shared through a radix tree over token ids.
// A second request sharing a ~400-token prefix reaches its first token at least 3x sooner on the CPU backend, with
// the same greedy answer as a server without the cache (the oracle: the uncached computation); concurrent clients
// sharing a prefix get the answers they get without it; a small pool evicts cached pages (LRU) and still answers
// the same; /metrics counts hits, hit tokens and evictions.
import { createCpuExecutor } from "@poot/backend-cpu";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  DEMO,
  LLAMA3,
  LLAMA3_TEMPLATE,
  SKIP_NOTE,
  metric,
  startTestServer,
  type TestServer,
} from "./server-helpers.js";

const M = "demo";
const PREFIX = (
  "You are a careful assistant. Read the following story and answer the question after it. " +
  "The old man looked at the sea and said that the water was colder than it had been in years, and the boy who " +
  "sat beside him on the broken wall listened without a word. They had fished together since the boy was small, " +
  "and every morning they walked down to the harbour before the sun came up, carrying the lines and the bait and " +
  "the heavy wooden box that held the knives. In the winter the wind came from the north and the boats stayed in, " +
  "and the old man mended the nets by the fire while the boy read to him from the books his mother had left. "
).repeat(3);

/** A streamed greedy chat: its text and the seconds until its first chunk (the first token). */
async function timed(s: TestServer, question: string): Promise<{ text: string; ttft: number }> {
  const t0 = performance.now();
  const stream = await s.client.chat.completions.create({
    model: M,
    messages: [{ role: "user", content: `${PREFIX}\nQuestion: ${question}` }],
    max_tokens: 8,
    temperature: 0,
    stream: true,
  });
  let ttft = -1,
    text = "";
  for await (const chunk of stream) {
    if (ttft < 0) ttft = (performance.now() - t0) / 1000;
    text += chunk.choices[0]?.delta.content ?? "";
  }
  return { text, ttft };
}

describe("prefix cache on the demo model (CPU backend)", { timeout: 600_000 }, () => {
  let cached: TestServer;
  let plain: TestServer;
  beforeAll(async () => {
    // Long socket limits: on a loaded machine a 400-token prefill holds the event loop for seconds (issue #20).
    const cpu = {
      context: 512,
      maxBatch: 4,
      modelId: M,
      executor: () => createCpuExecutor(),
      limits: { headersTimeoutMs: 600_000, requestTimeoutMs: 600_000 },
      queueTimeoutMs: 0,
    };
    cached = await startTestServer(DEMO, { ...cpu, prefixCache: true });
    plain = await startTestServer(DEMO, cpu);
  }, 300_000);
  afterAll(async () => {
    await cached?.close();
    await plain?.close();
  });

  test("a second request sharing a ~400-token prefix reaches its first token >= 3x sooner, same greedy answer", async () => {
    const n = (
      (await (
        await fetch(`${cached.url}/tokenize`, {
          method: "POST",
          body: JSON.stringify({ content: PREFIX }),
          headers: { "content-type": "application/json" },
        })
      ).json()) as { tokens: number[] }
    ).tokens.length;
    expect(n).toBeGreaterThanOrEqual(400);
    // Warm both servers' programs (prefill chunk sizes, decode) on an unrelated prompt first.
    await timed(cached, "warm-up");
    await timed(plain, "warm-up");
    const cold = await timed(cached, "Who read the books?"); // pays for the prefix (a different one: "warm-up" shares it!)
    const warm = await timed(cached, "Where did they walk?");
    const ref1 = await timed(plain, "Who read the books?");
    const ref2 = await timed(plain, "Where did they walk?");
    expect(cold.text).toBe(ref1.text);
    expect(warm.text).toBe(ref2.text);
    // Without the cache the second request pays the whole prompt again; with it, only the question.
    expect(ref2.ttft / warm.ttft).toBeGreaterThanOrEqual(3);
    expect(await metric(cached.url, "poot_prefix_cache_hits_total")).toBeGreaterThanOrEqual(2);
    expect(await metric(cached.url, "poot_prefix_cache_hit_tokens_total")).toBeGreaterThanOrEqual(2 * 384);
    expect(await metric(plain.url, "poot_prefix_cache_hits_total")).toBe(0);
    console.log(
      `prefix cache TTFT: ${(ref2.ttft * 1000).toFixed(0)} ms uncached, ${(warm.ttft * 1000).toFixed(0)} ms cached (${(ref2.ttft / warm.ttft).toFixed(1)}x)`,
    );
  });

  test("8 concurrent clients sharing a prefix: the same answers with and without the cache", async () => {
    const questions = Array.from({ length: 8 }, (_, i) => `Question number ${i}: what happened next?`);
    const head = PREFIX.slice(0, 400);
    const ask = (s: TestServer, q: string): Promise<string> =>
      s.client.chat.completions
        .create({ model: M, messages: [{ role: "user", content: `${head}\n${q}` }], max_tokens: 6, temperature: 0 })
        .then((r) => r.choices[0]!.message.content!);
    const withCache = await Promise.all(questions.map((q) => ask(cached, q)));
    const without = await Promise.all(questions.map((q) => ask(plain, q)));
    expect(withCache).toEqual(without);
  });
});

describe.skipIf(LLAMA3 === null)(`prefix cache eviction on a small pool${SKIP_NOTE}`, { timeout: 300_000 }, () => {
  let cached: TestServer;
  let plain: TestServer;
  beforeAll(async () => {
    const small = { context: 64, maxBatch: 2, pageSize: 4, kvPages: 40, chatTemplate: LLAMA3_TEMPLATE };
    cached = await startTestServer(LLAMA3!, { ...small, prefixCache: true });
    plain = await startTestServer(LLAMA3!, small);
  }, 180_000);
  afterAll(async () => {
    await cached?.close();
    await plain?.close();
  });

  test("distinct prompts fill the cache, least recently used pages are evicted, answers stay the uncached ones", async () => {
    const ask = (s: TestServer, p: string): Promise<string> =>
      s.client.completions
        .create({ model: "llama3", prompt: p, max_tokens: 6, temperature: 0, ignore_eos: true } as never)
        .then((r) => r.choices[0]!.text);
    for (let i = 0; i < 12; i++) {
      const p = `prompt ${i} ${"lorem ipsum dolor sit amet ".repeat(2)}${i}`;
      expect(await ask(cached, p)).toBe(await ask(plain, p));
    }
    expect(await metric(cached.url, "poot_prefix_cache_evictions_total")).toBeGreaterThan(0);
    expect(await metric(cached.url, "poot_prefix_cache_pages")).toBeLessThanOrEqual(40);
    // Nothing leaked: no session holds pages; what is in use is the cache's.
    expect(await metric(cached.url, "poot_engine_open_sequences")).toBe(0);
    expect(await metric(cached.url, "poot_kv_pages_in_use")).toBe(await metric(cached.url, "poot_prefix_cache_pages"));
  });
});

describe.skipIf(LLAMA3 === null)(
  `64 concurrent chats with and without the prefix cache${SKIP_NOTE}`,
  { timeout: 600_000 },
  () => {
    let cached: TestServer;
    let plain: TestServer;
    beforeAll(async () => {
      // 4-token pages, so the chat template's head and "Question number" are whole pages the prompts share.
      const load = { context: 48, chatTemplate: LLAMA3_TEMPLATE, maxBatch: 16, maxQueue: 64, pageSize: 4 };
      cached = await startTestServer(LLAMA3!, { ...load, prefixCache: true });
      plain = await startTestServer(LLAMA3!, load);
    }, 180_000);
    afterAll(async () => {
      await cached?.close();
      await plain?.close();
    });

    test("the same 64 streamed answers; hits counted; only the cache holds pages afterwards", async () => {
      const chat = async (s: TestServer, i: number): Promise<string> => {
        const stream = await s.client.chat.completions.create({
          model: "llama3",
          messages: [{ role: "user", content: `Question number ${i % 16}: what comes next?` }],
          max_tokens: 8,
          temperature: 0,
          stream: true,
        });
        let text = "";
        for await (const c of stream) text += c.choices[0]?.delta.content ?? "";
        return text;
      };
      const without = await Promise.all(Array.from({ length: 64 }, (_, i) => chat(plain, i)));
      // Twice: the first wave fills the cache as requests finish, the second starts from it.
      for (let wave = 0; wave < 2; wave++) {
        const withCache = await Promise.all(Array.from({ length: 64 }, (_, i) => chat(cached, i)));
        expect(withCache).toEqual(without);
      }
      expect(await metric(cached.url, "poot_prefix_cache_hits_total")).toBeGreaterThanOrEqual(64);
      expect(await metric(cached.url, "poot_engine_open_sequences")).toBe(0);
      expect(await metric(cached.url, "poot_kv_pages_reserved")).toBe(0);
      expect(await metric(cached.url, "poot_kv_pages_in_use")).toBe(
        await metric(cached.url, "poot_prefix_cache_pages"),
      );
    });
  },
);

// Admission control by KV pages, through the official openai client: the llama3 fixture served with a pool
// of two 16-token pages. A request whose prompt + max_tokens needs three pages can never run (400
// context_length_exceeded naming max_tokens and the KV cache's 32 tokens: retrying cannot help, issue #20); two requests of two pages each cannot run together, so the second waits in the
// queue until the first gives its pages back, then completes; a disconnected client's pages return at once. Steps
// are paced (50 ms each) so that the first request is still generating while the second arrives, on any machine.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
// @ts-expect-error: a plain ES module shared with the engine-worker tests (no declarations).
import { pacedEvalExecutor } from "./executors.mjs";
import { LLAMA3, SKIP_NOTE, metric, startTestServer, waitFor, type TestServer } from "./server-helpers.js";

const M = "llama3";

describe.skipIf(LLAMA3 === null)(`KV page admission control${SKIP_NOTE}`, { timeout: 120_000 }, () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(LLAMA3!, {
      context: 48,
      kvPages: 2,
      pageSize: 16,
      maxBatch: 4,
      maxQueue: 8,
      executor: () => pacedEvalExecutor(50),
    });
  }, 120_000);
  afterAll(async () => s?.close(), 60_000);

  test("a request larger than the whole pool gets 400, naming max_tokens and the pool's 32 tokens", async () => {
    expect(await metric(s.url, "poot_kv_pages_total")).toBe(2);
    const r = s.client.completions.create({ model: M, prompt: "x", max_tokens: 40 });
    await expect(r).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(r).rejects.toMatchObject({ status: 400, code: "context_length_exceeded", param: "max_tokens" });
    const raw = await fetch(`${s.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: M, prompt: "x", max_tokens: 40 }),
    });
    const body = (await raw.json()) as { error: { message: string; type: string } };
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toMatch(/KV cache holds 32 tokens .* at most \d+/);
  });

  test("a request that fits the pool but not its free pages waits, then completes; no page is left", async () => {
    const abortA = new AbortController();
    const a = (await s.client.completions.create(
      { model: M, prompt: "a", max_tokens: 20, ignore_eos: true, stream: true } as never,
      { signal: abortA.signal },
    )) as unknown as AsyncIterable<{ choices: { text: string }[] }>;
    const itA = a[Symbol.asyncIterator]();
    await itA.next();
    // A holds (or has reserved) both pages: B must wait even though a batch slot is free.
    expect((await metric(s.url, "poot_kv_pages_in_use")) + (await metric(s.url, "poot_kv_pages_reserved"))).toBe(2);
    const b = s.client.completions.create({ model: M, prompt: "b", max_tokens: 20, ignore_eos: true } as never);
    await waitFor(async () => (await metric(s.url, "poot_queue_depth")) === 1);
    expect(await metric(s.url, "poot_active_sequences")).toBe(1);
    // A's client goes away: its pages come back and B is admitted.
    abortA.abort();
    const rb = (await b) as unknown as { usage: { completion_tokens: number } };
    expect(rb.usage.completion_tokens).toBe(20);
    await waitFor(async () => (await metric(s.url, "poot_engine_open_sequences")) === 0);
    expect(await metric(s.url, "poot_kv_pages_in_use")).toBe(0);
    expect(await metric(s.url, "poot_kv_pages_reserved")).toBe(0);
    expect(s.engine.pool.stats).toMatchObject({ pagesInUse: 0, pagesReserved: 0 });
  });
});

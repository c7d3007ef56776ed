// A bounded loopback load test: 64 concurrent streaming chat requests against the llama3 fixture on the
// eval executor and on the CPU backend (@poot/backend-cpu: Wasm kernels on worker threads) all complete, each identical to its sequential greedy run (and to @poot/models' own greedy
// loop), with continuous batching visible in the step count, /health answering while the batch runs, and
// no KV page leaked afterwards (the engine's page pool, read from /metrics, is back to zero in use).
import { createCpuExecutor } from "@poot/backend-cpu";
import { type Executor } from "@poot/executor";
import { createEvalExecutor } from "@poot/backend-reference";
import { LoadedModel } from "@poot/models";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  LLAMA3,
  LLAMA3_TEMPLATE,
  SKIP_NOTE,
  llama3Tokenizer,
  metric,
  startTestServer,
  type TestServer,
} from "./server-helpers.js";

const M = "llama3";
const CLIENTS = 64;
const DISTINCT = 16;
const MAX_TOKENS = 8;

const BACKENDS: [string, () => Executor][] = [
  ["eval", () => createEvalExecutor()],
  ["cpu", () => createCpuExecutor()],
];

describe.skipIf(LLAMA3 === null).each(BACKENDS)(
  `64 concurrent streaming chats on %s${SKIP_NOTE}`,
  { timeout: 180_000 },
  (backend, executor) => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer(LLAMA3!, {
        context: 48,
        chatTemplate: LLAMA3_TEMPLATE,
        maxBatch: 16,
        maxQueue: 64,
        executor,
      });
    }, 180_000);
    afterAll(async () => s?.close(), 60_000);

    const question = (i: number) => `Question number ${i % DISTINCT}: what comes next?`;

    async function streamChat(i: number): Promise<{ text: string; finish: string | null; tokens: number }> {
      const stream = await s.client.chat.completions.create({
        model: M,
        messages: [{ role: "user", content: question(i) }],
        max_tokens: MAX_TOKENS,
        temperature: 0,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = "";
      let finish: string | null = null;
      let tokens = -1;
      for await (const chunk of stream) {
        for (const c of chunk.choices) {
          text += c.delta.content ?? "";
          finish = c.finish_reason ?? finish;
        }
        if (chunk.usage) tokens = chunk.usage.completion_tokens;
      }
      return { text, finish, tokens };
    }

    test("all complete, each equal to its sequential run; batched; nothing leaked", { timeout: 600_000 }, async () => {
      // Sequential: one request at a time, each distinct prompt once.
      const t0 = performance.now();
      const sequential: { text: string; finish: string | null; tokens: number }[] = [];
      for (let i = 0; i < DISTINCT; i++) sequential.push(await streamChat(i));
      const seqMs = performance.now() - t0;
      // The independent reference: @poot/models' greedy loop over the same template and tokenizer.
      const tok = llama3Tokenizer();
      const oracle = LoadedModel.open(LLAMA3!);
      try {
        for (let i = 0; i < DISTINCT; i++) {
          const ids = tok.encode(tok.applyChatTemplate([{ role: "user", content: question(i) }]));
          const g = oracle.generate(ids, MAX_TOKENS, oracle.config.eosTokenIds).ids;
          const out = oracle.config.eosTokenIds.includes(g[g.length - 1]!) ? g.slice(0, -1) : g;
          expect(sequential[i]!.text).toBe(tok.decode(out, { skipSpecial: true }));
          expect(sequential[i]!.tokens).toBe(out.length);
        }
      } finally {
        oracle.close();
      }
      const steps0 = await metric(s.url, "poot_engine_steps_total");
      const t1 = performance.now();
      // While the batch runs, poll /health and the KV page gauge: the event loop must keep answering, and the
      // pages must really be used (so zero afterwards means they were given back, not never taken).
      let done = false,
        healthOk = 0,
        healthMaxMs = 0,
        peakPages = 0;
      const poller = (async () => {
        while (!done) {
          const h0 = performance.now();
          if ((await fetch(`${s.url}/health`)).status === 200) healthOk++;
          healthMaxMs = Math.max(healthMaxMs, performance.now() - h0);
          peakPages = Math.max(peakPages, await metric(s.url, "poot_kv_pages_in_use"));
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      const together = await Promise.all(Array.from({ length: CLIENTS }, (_, i) => streamChat(i)));
      const conMs = performance.now() - t1;
      done = true;
      await poller;
      expect(healthOk).toBeGreaterThan(1);
      expect(peakPages).toBeGreaterThan(0);
      const steps = (await metric(s.url, "poot_engine_steps_total")) - steps0;
      together.forEach((r, i) => expect(r).toEqual(sequential[i % DISTINCT]));
      const tokens = together.reduce((n, r) => n + r.tokens, 0);
      // One by one, 64 requests need one step per token; 16 at a time need about a sixteenth of that.
      expect(steps).toBeLessThan(tokens / 4);
      expect(await metric(s.url, "poot_kv_pages_in_use")).toBe(0);
      expect(await metric(s.url, "poot_kv_pages_reserved")).toBe(0);
      expect(await metric(s.url, "poot_active_sequences")).toBe(0);
      expect(await metric(s.url, "poot_engine_open_sequences")).toBe(0);
      expect(s.engine.openSessions).toBe(0);
      const seqTokens = sequential.reduce((n, r) => n + r.tokens, 0);
      console.log(
        `load (${backend}): ${CLIENTS} concurrent streaming chats, ${tokens} tokens in ${(conMs / 1000).toFixed(1)} s (${((tokens / conMs) * 1000).toFixed(1)} tok/s, ${steps} steps); sequential ${seqTokens} tokens in ${(seqMs / 1000).toFixed(1)} s (${((seqTokens / seqMs) * 1000).toFixed(1)} tok/s); peak KV pages ${peakPages}; /health answered ${healthOk} polls, slowest ${healthMaxMs.toFixed(0)} ms`,
      );
    });
  },
);

// Prompt logprobs (/v1/completions with echo and logprobs) through the official `openai` client against the llama3
// fixture: every prompt token's logprob is log_softmax of transformers' float64 logits at the token before it
// (fixtures/hf/llama3/reference.safetensors), the first is null, and the generated tokens follow with theirs.
import * as fs from "node:fs";
import * as path from "node:path";
import { openSafetensors } from "@poot/models";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LLAMA3, SKIP_NOTE, startTestServer, startWorkerServer, type TestServer } from "./server-helpers.js";

/** The engine stepped on the HTTP thread, and on the engine worker thread `poot serve` uses (decision 2004). */
const MODES: [string, typeof startTestServer | typeof startWorkerServer][] = [
  ["in process", startTestServer],
  ["on the engine worker", startWorkerServer],
];

describe.skipIf(LLAMA3 === null).each(MODES)(`echo with logprobs, %s${SKIP_NOTE}`, { timeout: 180_000 }, (_, start) => {
  let s: Pick<TestServer, "url" | "client" | "close">;
  let ref: { prompt_ids: number[]; greedy_ids: number[] };
  let logits: Float32Array;
  beforeAll(async () => {
    s = await start(LLAMA3!, { context: 64, maxBatch: 2 });
    ref = JSON.parse(fs.readFileSync(path.join(LLAMA3!, "reference.json"), "utf8")) as typeof ref;
    logits = openSafetensors(path.join(LLAMA3!, "reference.safetensors")).readF32Sync("full_logits");
  }, 180_000);
  afterAll(async () => {
    await s?.close();
  });

  /** log_softmax(transformers' logits at row r)[id], in float64. */
  const oracle = (r: number, id: number): number => {
    const V = logits.length / (ref.prompt_ids.length + ref.greedy_ids.length);
    const row = Array.from(logits.subarray(r * V, (r + 1) * V));
    const max = Math.max(...row);
    return row[id]! - (max + Math.log(row.reduce((a, x) => a + Math.exp(x - max), 0)));
  };

  test("prompt tokens' logprobs match transformers' (first null), then the greedy tokens'", async () => {
    const T = ref.prompt_ids.length;
    const r = await s.client.completions.create({
      model: "llama3",
      prompt: ref.prompt_ids,
      max_tokens: 3,
      temperature: 0,
      logprobs: 2,
      echo: true,
      ignore_eos: true,
    } as never);
    const lp = r.choices[0]!.logprobs!;
    expect(lp.tokens!.length).toBe(T + 3);
    expect(lp.token_logprobs![0]).toBeNull();
    expect(lp.top_logprobs![0]).toBeNull();
    let worst = 0;
    for (let i = 1; i < T + 3; i++) {
      const id = i < T ? ref.prompt_ids[i]! : ref.greedy_ids[i - T]!;
      worst = Math.max(worst, Math.abs(lp.token_logprobs![i]! - oracle(i - 1, id)));
      expect(Object.keys(lp.top_logprobs![i]!).length).toBeGreaterThanOrEqual(1);
    }
    expect(worst).toBeLessThan(1e-3);
    // Offsets: prompt tokens from 0, each after the previous token's text.
    expect(lp.text_offset![0]).toBe(0);
    expect(lp.text_offset![1]).toBe(lp.tokens![0]!.length);
  });

  test("streamed: the echo chunk carries the prompt logprobs", async () => {
    const stream = await s.client.completions.create({
      model: "llama3",
      prompt: ref.prompt_ids,
      max_tokens: 2,
      temperature: 0,
      logprobs: 1,
      echo: true,
      stream: true,
    } as never);
    const chunks: { choices: { logprobs: { token_logprobs: (number | null)[] } | null }[] }[] = [];
    for await (const c of stream as unknown as AsyncIterable<(typeof chunks)[number]>) chunks.push(c);
    const first = chunks[0]!.choices[0]!.logprobs!;
    expect(first.token_logprobs.length).toBe(ref.prompt_ids.length);
    expect(first.token_logprobs[0]).toBeNull();
    expect(Math.abs(first.token_logprobs[5]! - oracle(4, ref.prompt_ids[5]!))).toBeLessThan(1e-3);
  });
});

// The server driven by the official `openai` client against the llama3 fixture on the eval backend:
// greedy ids and logprobs against transformers' reference, text against @poot/models' own greedy loop
// (LoadedModel.generate, not the runtime), streaming, stop strings, seeds, n, usage and concurrency.
import * as fs from "node:fs";
import * as path from "node:path";
import { LoadedModel, Tokenizer, openSafetensors } from "@poot/models";
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

const CTX = 64;

describe.skipIf(LLAMA3 === null)(`openai client against the llama3 fixture${SKIP_NOTE}`, { timeout: 180_000 }, () => {
  let s: TestServer;
  let ref: { prompt_ids: number[]; greedy_ids: number[] };
  let tok: Tokenizer;
  let oracle: LoadedModel;
  const MODEL = "llama3";

  beforeAll(async () => {
    s = await startTestServer(LLAMA3!, { context: CTX, chatTemplate: LLAMA3_TEMPLATE, maxBatch: 4 });
    ref = JSON.parse(fs.readFileSync(path.join(LLAMA3!, "reference.json"), "utf8")) as typeof ref;
    tok = llama3Tokenizer();
    oracle = LoadedModel.open(LLAMA3!);
  }, 180_000);
  afterAll(async () => {
    await s?.close();
    oracle?.close();
  });

  /** Greedy text after `ids` by @poot/models' reference loop (EOS excluded, stops at EOS). */
  function greedyText(ids: number[], n: number): { text: string; ids: number[] } {
    const eos = oracle.config.eosTokenIds;
    const g = oracle.generate(ids, n, eos).ids;
    const out = eos.includes(g[g.length - 1]!) ? g.slice(0, -1) : g;
    return { text: tok.decode(out, { skipSpecial: true }), ids: out };
  }

  test("GET /v1/models lists the served model", async () => {
    const page = await s.client.models.list();
    expect(page.data.map((m) => m.id)).toEqual([MODEL]);
    expect(page.data[0]!.object).toBe("model");
    const one = await s.client.models.retrieve(MODEL);
    expect(one.id).toBe(MODEL);
  });

  test("greedy completion of the fixture prompt ids: the reference greedy ids, logprobs within 1e-3 of transformers'", async () => {
    const r = await s.client.completions.create({
      model: MODEL,
      prompt: ref.prompt_ids,
      max_tokens: 16,
      temperature: 0,
      logprobs: 2,
      ignore_eos: true,
    } as never);
    const c = r.choices[0]!;
    // Token strings the server reports are the fixture's greedy ids, one by one.
    expect(c.logprobs!.tokens).toEqual(ref.greedy_ids.map((id) => tok.decode([id])));
    expect(c.text).toBe(tok.decode(ref.greedy_ids, { skipSpecial: true }));
    expect(c.finish_reason).toBe("length");
    expect(r.usage).toEqual({ prompt_tokens: 20, completion_tokens: 16, total_tokens: 36 });
    // logprob of each greedy token = log_softmax(full_logits[T-1+i]) in float64, from transformers' logits.
    const full = openSafetensors(path.join(LLAMA3!, "reference.safetensors")).readF32Sync("full_logits");
    const V = full.length / (ref.prompt_ids.length + 16);
    ref.greedy_ids.forEach((id, i) => {
      const row = Array.from(full.subarray((ref.prompt_ids.length - 1 + i) * V, (ref.prompt_ids.length + i) * V));
      const max = Math.max(...row);
      const lse = max + Math.log(row.reduce((a, x) => a + Math.exp(x - max), 0));
      expect(Math.abs(c.logprobs!.token_logprobs![i]! - (row[id]! - lse))).toBeLessThan(1e-3);
      // The greedy token is the most likely one, so it is the best of top_logprobs (a dict: no order).
      const top = Object.values(c.logprobs!.top_logprobs![i]!);
      expect(top.length).toBe(2);
      expect(Math.max(...top)).toBeCloseTo(row[id]! - lse, 3);
    });
    expect(c.logprobs!.text_offset![1]).toBe(c.logprobs!.tokens![0]!.length);
  });

  test("a text prompt: the same greedy text as @poot/models' reference loop; usage counts the tokenizer's tokens", async () => {
    const prompt = "The quick brown fox";
    const ids = tok.encode(prompt, { addSpecial: true });
    const want = greedyText(ids, 12);
    const r = await s.client.completions.create({ model: MODEL, prompt, max_tokens: 12, temperature: 0 });
    expect(r.choices[0]!.text).toBe(want.text);
    expect(r.usage!.prompt_tokens).toBe(ids.length);
    expect(r.usage!.completion_tokens).toBe(want.ids.length);
    expect(r.usage!.total_tokens).toBe(ids.length + want.ids.length);
  });

  test("chat: the template is applied; non-streamed and streamed answers equal the reference greedy text", async () => {
    const messages = [
      { role: "system" as const, content: "Be brief." },
      { role: "user" as const, content: "Hello there" },
    ];
    const ids = tok.encode(tok.applyChatTemplate(messages), { addSpecial: false });
    const want = greedyText(ids, 10);
    const r = await s.client.chat.completions.create({ model: MODEL, messages, max_tokens: 10, temperature: 0 });
    expect(r.object).toBe("chat.completion");
    expect(r.choices[0]!.message.role).toBe("assistant");
    expect(r.choices[0]!.message.content).toBe(want.text);
    expect(r.usage!.prompt_tokens).toBe(ids.length);
    const stream = await s.client.chat.completions.create({
      model: MODEL,
      messages,
      max_tokens: 10,
      temperature: 0,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    let finish: string | null = null;
    let usage: unknown = null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.object).toBe("chat.completion.chunk");
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        text += c.delta.content ?? "";
        if (c.finish_reason !== null) finish = c.finish_reason;
      }
    }
    expect(text).toBe(want.text);
    expect(finish).toBe(r.choices[0]!.finish_reason);
    expect(usage).toEqual(r.usage);
    expect(chunks).toBeGreaterThan(3);
  });

  test("the raw stream is server-sent events ending with data: [DONE]", async () => {
    const res = await fetch(`${s.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: MODEL,
        prompt: "Hi",
        max_tokens: 3,
        temperature: 0,
        stream: true,
        ignore_eos: true,
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const body = await res.text();
    const events = body.split("\n\n").filter((e) => e !== "");
    expect(events.every((e) => e.startsWith("data: "))).toBe(true);
    expect(events[events.length - 1]).toBe("data: [DONE]");
    const last = JSON.parse(events[events.length - 2]!.slice(6)) as { choices: { finish_reason: string }[] };
    expect(last.choices[0]!.finish_reason).toBe("length");
  });

  test("stop sequences end the text before the stop string, with finish_reason stop", async () => {
    const full = tok.decode(ref.greedy_ids, { skipSpecial: true });
    // A stop string from the middle of the known greedy continuation.
    const stop = full.slice(6, 9);
    const cut = full.indexOf(stop);
    expect(cut).toBeGreaterThan(0);
    const r = await s.client.completions.create({
      model: MODEL,
      prompt: ref.prompt_ids,
      max_tokens: 16,
      temperature: 0,
      stop: ["never-in-this-text", stop],
      ignore_eos: true,
    } as never);
    expect(r.choices[0]!.text).toBe(full.slice(0, cut));
    expect(r.choices[0]!.finish_reason).toBe("stop");
    const stream = await s.client.completions.create({
      model: MODEL,
      prompt: ref.prompt_ids,
      max_tokens: 16,
      temperature: 0,
      stop,
      stream: true,
      ignore_eos: true,
    } as never);
    let text = "";
    for await (const chunk of stream as unknown as AsyncIterable<{ choices: { text: string }[] }>)
      text += chunk.choices.map((c) => c.text).join("");
    expect(text).toBe(full.slice(0, cut));
  });

  test("seeds reproduce: the same seed gives the same sampled text, another seed differs; n choices use distinct streams", async () => {
    const ask = (seed: number, n = 1) =>
      s.client.completions.create({
        model: MODEL,
        prompt: ref.prompt_ids,
        max_tokens: 12,
        temperature: 1.5,
        seed,
        n,
        ignore_eos: true,
      } as never);
    const a = await ask(7),
      b = await ask(7),
      c = await ask(8);
    expect(a.choices[0]!.text).toBe(b.choices[0]!.text);
    expect(a.choices[0]!.text).not.toBe(c.choices[0]!.text);
    // With n = 2 and seed 7, choice 0 is seed 7's text and choice 1 is seed 8's.
    const two = await ask(7, 2);
    expect(two.choices.map((x) => x.index)).toEqual([0, 1]);
    expect(two.choices[0]!.text).toBe(a.choices[0]!.text);
    expect(two.choices[1]!.text).toBe(c.choices[0]!.text);
    expect(two.usage).toEqual({ prompt_tokens: 20, completion_tokens: 24, total_tokens: 44 });
  });

  test("a stream with n = 2 interleaves both choices, each ending with its finish reason; echo prepends the prompt", async () => {
    const stream = await s.client.completions.create({
      model: MODEL,
      prompt: "Tell",
      max_tokens: 4,
      temperature: 0.9,
      seed: 3,
      n: 2,
      stream: true,
      ignore_eos: true,
    } as never);
    const text = ["", ""];
    const finish: (string | null)[] = [null, null];
    for await (const chunk of stream as unknown as AsyncIterable<{
      choices: { index: number; text: string; finish_reason: string | null }[];
    }>) {
      for (const c of chunk.choices) {
        text[c.index] += c.text;
        finish[c.index] = c.finish_reason ?? finish[c.index]!;
      }
    }
    expect(finish).toEqual(["length", "length"]);
    const whole = await s.client.completions.create({
      model: MODEL,
      prompt: "Tell",
      max_tokens: 4,
      temperature: 0.9,
      seed: 3,
      n: 2,
      ignore_eos: true,
    } as never);
    expect(whole.choices.map((c) => c.text)).toEqual(text);
    const echo = await s.client.completions.create({
      model: MODEL,
      prompt: "Tell",
      max_tokens: 4,
      temperature: 0.9,
      seed: 3,
      echo: true,
      ignore_eos: true,
    } as never);
    expect(echo.choices[0]!.text).toBe(`Tell${text[0]}`);
  });

  test("chat logprobs: top_logprobs per token, the chosen token's logprob first under greedy", async () => {
    const r = await s.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "x" }],
      max_tokens: 4,
      temperature: 0,
      logprobs: true,
      top_logprobs: 3,
    });
    const content = r.choices[0]!.logprobs!.content!;
    expect(content.length).toBe(r.usage!.completion_tokens);
    for (const t of content) {
      expect(t.top_logprobs.length).toBe(3);
      expect(t.top_logprobs[0]!.logprob).toBeCloseTo(t.logprob, 12);
      expect(t.top_logprobs[0]!.logprob).toBeGreaterThanOrEqual(t.top_logprobs[1]!.logprob);
      expect(t.logprob).toBeLessThan(0);
      expect(Buffer.from(t.bytes!).toString("utf8")).toBe(t.token);
    }
  });

  test("concurrent clients each get the same text as alone, and the steps were batched", async () => {
    const prompts = ["Once upon", "In the beginning", "The meaning of life", "A B C", "1 2 3", "Hello"];
    const alone = prompts.map((p) => greedyText(tok.encode(p, { addSpecial: true }), 8).text);
    const steps0 = await metric(s.url, "poot_engine_steps_total");
    const together = await Promise.all(
      prompts.map((prompt) => s.client.completions.create({ model: MODEL, prompt, max_tokens: 8, temperature: 0 })),
    );
    expect(together.map((r) => r.choices[0]!.text)).toEqual(alone);
    const tokens = together.reduce((n, r) => n + r.usage!.completion_tokens, 0);
    // Run one by one this would take one step per token; batching (max 4) needs far fewer.
    expect((await metric(s.url, "poot_engine_steps_total")) - steps0).toBeLessThan(tokens);
  });
});

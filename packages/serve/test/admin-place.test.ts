// POST /admin/place (decision 1707): a running server moves blocks between devices between steps, each block taking
// its KV state; a stream relocated at token 5 and back at token 10 gives the unrelocated run's tokens, and its first
// 16 are transformers' greedy ids (the oracle nobody here wrote). The route is behind the API key; a bad placement
// is a one-line 400 that moves nothing. Planted violation: a relocation that loses the KV state fails the gate.
import * as fs from "node:fs";
import * as path from "node:path";
import { createEvalExecutor } from "@poot/backend-reference";
import { Engine, parsePlacement } from "@poot/runtime";
import { RuntimeServeEngine, createServer, type PootServer } from "@poot/serve";
import OpenAI from "openai";
import { describe, expect, test } from "vitest";
import { LLAMA3, SKIP_NOTE, llama3Tokenizer } from "./server-helpers.js";

const KEY = "sk-admin-test-0123456789";
const N = 40;

interface Started {
  readonly url: string;
  readonly server: PootServer;
  readonly engine: Engine;
  readonly client: OpenAI;
  close(): Promise<void>;
}

/** A server over the llama3 fixture split across two eval executors ("a": embed and layer 0, "b": layer 1 and head). */
async function start(plant?: (e: Engine) => void): Promise<Started> {
  const devices = [
    { name: "a", executor: createEvalExecutor() },
    { name: "b", executor: createEvalExecutor() },
  ];
  const engine = Engine.load(LLAMA3!, {
    executor: devices[0]!.executor,
    devices,
    placement: parsePlacement("0:a,1:b", 2, ["a", "b"]),
    context: 64,
    maxSequences: 2,
  });
  plant?.(engine);
  const serveEngine = new RuntimeServeEngine(engine);
  const server = createServer({ modelId: "llama3", engine: serveEngine, apiKey: KEY });
  const url = await server.listen({ port: 0 });
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: KEY, maxRetries: 0 });
  return {
    url,
    server,
    engine,
    client,
    close: async () => {
      await server.close();
      serveEngine.close();
      for (const d of devices) d.executor.dispose();
    },
  };
}

async function admin(
  s: Started,
  method: "GET" | "POST",
  body?: unknown,
  key: string | null = KEY,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const r = await fetch(`${s.url}/admin/place`, {
    method,
    headers: {
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: r.status, json: (await r.json()) as Record<string, unknown> };
}

const ref =
  LLAMA3 === null
    ? null
    : (JSON.parse(fs.readFileSync(path.join(LLAMA3, "reference.json"), "utf8")) as {
        prompt_ids: number[];
        greedy_ids: number[];
      });

/** Streams N greedy tokens, moving layer 0 (and the embedding) to b after token 5 and back after token 10. */
async function relocatedStream(s: Started): Promise<{ text: string; movedAt: number[] }> {
  // @ts-expect-error ignore_eos is poot's extension (vLLM's name): keep generating past EOS
  const stream = await s.client.completions.create({
    model: "llama3",
    prompt: ref!.prompt_ids,
    max_tokens: N,
    temperature: 0,
    logprobs: 0,
    stream: true,
    ignore_eos: true,
  });
  let text = "";
  let tokens = 0;
  const movedAt: number[] = [];
  const moves: Promise<void>[] = [];
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (c === undefined) continue;
    text += c.text;
    tokens += c.logprobs?.tokens?.length ?? 0;
    const move = (place: string) =>
      admin(s, "POST", { place }).then((r) => {
        expect(r.status, JSON.stringify(r.json)).toBe(200);
        movedAt.push(tokens);
      });
    if (tokens >= 5 && moves.length === 0) moves.push(move("0-1:b"));
    if (tokens >= 10 && moves.length === 1) {
      await moves[0];
      moves.push(move("0:a,1:b"));
    }
  }
  await Promise.all(moves);
  expect(tokens).toBe(N);
  return { text, movedAt };
}

describe.skipIf(LLAMA3 === null)(`POST /admin/place${SKIP_NOTE}`, () => {
  test("relocation at token 5 and back at 10 mid-stream: the unrelocated run's tokens, transformers' first 16", async () => {
    const s = await start();
    try {
      const plain = await s.client.completions.create({
        model: "llama3",
        prompt: ref!.prompt_ids,
        max_tokens: N,
        temperature: 0,
        // @ts-expect-error poot's extension
        ignore_eos: true,
      });
      const unrelocated = plain.choices[0]!.text;
      // The server's text leaves special tokens out (one of the greedy ids is <|end_header_id|>).
      expect(unrelocated.startsWith(llama3Tokenizer().decode(ref!.greedy_ids, { skipSpecial: true }))).toBe(true);
      const before = await admin(s, "GET");
      expect(before.json).toMatchObject({ place: "0:a,1:b", units_per_token: 2, handoffs_per_token: 1 });
      const { text, movedAt } = await relocatedStream(s);
      // Both moves landed while the stream still had tokens to go.
      expect(movedAt).toHaveLength(2);
      expect(movedAt[1]!).toBeLessThan(N);
      expect(text).toBe(unrelocated);
      const after = await admin(s, "GET");
      expect(after.json).toMatchObject({ place: "0:a,1:b", relocations: 2 });
      expect(s.engine.pipelineStats!.relocatedStateBytes).toBeGreaterThan(0);
    } finally {
      await s.close();
    }
  });

  test("planted: a relocation that loses the KV state gives other tokens (the gate catches it)", async () => {
    const s = await start((e) => {
      const p = e.pipeline!;
      const relocate = p.relocate.bind(p);
      p.relocate = (placement) => {
        relocate(placement);
        p.state().zero();
      };
    });
    try {
      const plain = await s.client.completions.create({
        model: "llama3",
        prompt: ref!.prompt_ids,
        max_tokens: N,
        temperature: 0,
        // @ts-expect-error poot's extension
        ignore_eos: true,
      });
      const { text } = await relocatedStream(s);
      expect(text).not.toBe(plain.choices[0]!.text);
    } finally {
      await s.close();
    }
  });

  test("behind the API key; a bad placement is a one-line 400 and moves nothing", async () => {
    const s = await start();
    try {
      expect((await admin(s, "POST", { place: "0-1:b" }, null)).status).toBe(401);
      expect((await admin(s, "GET", undefined, "sk-wrong")).status).toBe(401);
      for (const [body, re] of [
        [{ place: "0:a,1:tpu" }, /names device "tpu", which is not available \(available: a, b\)/],
        [{ place: "0-1:a,1:b" }, /"1:b" overlaps an earlier entry at layer 1/],
        [{ place: "0:a" }, /leaves layer\(s\) 1 unplaced/],
        [{ place: "0-5:a" }, /the model has layers 0-1/],
        [{ place: "layers:a" }, /is not RANGE:DEVICE/],
        [{ place: 3 }, /place/],
        [{}, /place/],
        [{ place: "0-1:a", extra: 1 }, /additional/],
      ] as const) {
        const r = await admin(s, "POST", body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        const err = r.json["error"] as { message: string; param: string | null };
        expect(err.message).toMatch(re);
        expect(err.message.split("\n")).toHaveLength(1);
      }
      const now = await admin(s, "GET");
      expect(now.json).toMatchObject({ place: "0:a,1:b", relocations: 0 });
    } finally {
      await s.close();
    }
  });
});

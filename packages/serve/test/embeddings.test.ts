// /v1/embeddings through the official `openai` client, and llama-server's /tokenize and /detokenize, against
// the demo model on the eval backend. Oracles: transformers' float64 logits (models/demo/reference.safetensors)
// and its tokenizer's ids (reference.json). The demo model ties its head to the embedding E [V, D], so its
// logits are E·h for the final normed hidden state h: least squares on transformers' logits recovers h, and
// the mean of the recovered rows is the embedding the server must return (mean pooling is linear).
import * as fs from "node:fs";
import * as path from "node:path";
import { openSafetensors } from "@poot/models";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DEMO, startTestServer, startWorkerServer, type TestServer } from "./server-helpers.js";

const M = "demo";

/** Solves the symmetric positive-definite system A x = b (n x n, row-major) by Cholesky, in float64. */
function cholSolve(a: Float64Array, b: Float64Array, n: number): Float64Array {
  const l = new Float64Array(n * n);
  for (let i = 0; i < n; i++)
    for (let j = 0; j <= i; j++) {
      let s = a[i * n + j]!;
      for (let k = 0; k < j; k++) s -= l[i * n + k]! * l[j * n + k]!;
      l[i * n + j] = i === j ? Math.sqrt(s) : s / l[j * n + j]!;
    }
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let s = b[i]!;
    for (let k = 0; k < i; k++) s -= l[i * n + k]! * y[k]!;
    y[i] = s / l[i * n + i]!;
  }
  const x = new Float64Array(n);
  for (let i = n - 1; i >= 0; i--) {
    let s = y[i]!;
    for (let k = i + 1; k < n; k++) s -= l[k * n + i]! * x[k]!;
    x[i] = s / l[i * n + i]!;
  }
  return x;
}

/** The engine stepped on the HTTP thread, and on the engine worker thread `poot serve` uses (decision 2004). */
const MODES: [string, typeof startTestServer | typeof startWorkerServer][] = [
  ["in process", startTestServer],
  ["on the engine worker", startWorkerServer],
];

describe.each(MODES)(
  "/v1/embeddings, /tokenize, /detokenize on the demo model, %s",
  { timeout: 180_000 },
  (_, start) => {
    let s: Pick<TestServer, "url" | "client" | "close">;
    let ref: { prompt: string; prompt_ids: number[]; greedy_ids: number[]; greedy_text: string };
    beforeAll(async () => {
      s = await start(DEMO, { context: 64, maxBatch: 2, modelId: M });
      ref = JSON.parse(fs.readFileSync(path.join(DEMO, "reference.json"), "utf8")) as typeof ref;
    }, 180_000);
    afterAll(async () => {
      await s?.close();
    });

    /** The mean-pooled final hidden state of the reference prompt, recovered from transformers' logits. */
    function oracleMean(): Float64Array {
      const st = openSafetensors(path.join(DEMO, "model.safetensors"));
      const e = st.readF32Sync("model.embed_tokens.weight");
      const logits = openSafetensors(path.join(DEMO, "reference.safetensors")).readF32Sync("prompt_logits");
      const T = ref.prompt_ids.length,
        V = logits.length / T,
        D = e.length / V;
      const mean = new Float64Array(V);
      for (let t = 0; t < T; t++) for (let v = 0; v < V; v++) mean[v]! += logits[t * V + v]! / T;
      // Normal equations: (EᵀE) h = Eᵀ l.
      const ete = new Float64Array(D * D),
        etl = new Float64Array(D);
      for (let v = 0; v < V; v++) {
        const row = e.subarray(v * D, (v + 1) * D);
        for (let i = 0; i < D; i++) {
          etl[i]! += row[i]! * mean[v]!;
          for (let j = 0; j <= i; j++) ete[i * D + j]! += row[i]! * row[j]!;
        }
      }
      for (let i = 0; i < D; i++) for (let j = i + 1; j < D; j++) ete[i * D + j] = ete[j * D + i]!;
      return cholSolve(ete, etl, D);
    }

    test("the embedding of the reference prompt is transformers' mean final hidden state (raw and L2-normalized)", async () => {
      const want = oracleMean();
      const norm = Math.sqrt(want.reduce((a, x) => a + x * x, 0));
      // Raw mean (normalize: false, a documented extension) against the recovered mean, float lists.
      const raw = await s.client.embeddings.create({
        model: M,
        input: ref.prompt,
        encoding_format: "float",
        normalize: false,
      } as never);
      const got = raw.data[0]!.embedding;
      expect(got.length).toBe(want.length);
      let worst = 0;
      got.forEach((x, i) => (worst = Math.max(worst, Math.abs(x - want[i]!))));
      // Measured 1.3e-7 of the largest component (float32 engine rows against float64 transformers' logits).
      expect(worst / Math.max(...want.map(Math.abs))).toBeLessThan(1e-5);
      expect(raw.usage).toEqual({ prompt_tokens: ref.prompt_ids.length, total_tokens: ref.prompt_ids.length });
      // The client's default asks for base64 and decodes it: the unit vector along the same mean.
      const unit = await s.client.embeddings.create({ model: M, input: ref.prompt });
      const u = unit.data[0]!.embedding;
      expect(Math.abs(Math.hypot(...u) - 1)).toBeLessThan(1e-5);
      u.forEach((x, i) => expect(Math.abs(x - want[i]! / norm)).toBeLessThan(1e-3));
    });

    test("several inputs (texts and token lists) keep their order; token ids embed like their text", async () => {
      const r = await s.client.embeddings.create({ model: M, input: ["hello there", ref.prompt, "a"] });
      expect(r.data.map((d) => d.index)).toEqual([0, 1, 2]);
      const ids = await s.client.embeddings.create({ model: M, input: [ref.prompt_ids, [5, 6, 7]] });
      ids.data[0]!.embedding.forEach((x, i) => expect(x).toBeCloseTo(r.data[1]!.embedding[i]!, 5));
      // Last-token pooling (extension) differs from the mean.
      const last = await s.client.embeddings.create({ model: M, input: ref.prompt, pooling: "last" } as never);
      expect(last.data[0]!.embedding).not.toEqual(r.data[1]!.embedding);
    });

    test("bad embeddings requests are one-line 400s naming the field", async () => {
      const bad = async (body: object, param: string): Promise<void> => {
        const err = await s.client.embeddings.create(body as never).then(
          () => null,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(OpenAI.BadRequestError);
        const e = err as InstanceType<typeof OpenAI.BadRequestError>;
        expect(e.status).toBe(400);
        expect(e.param).toBe(param);
        expect(e.message).not.toContain("\n");
      };
      await bad({ model: M }, "input");
      await bad({ model: M, input: "" }, "input");
      await bad({ model: M, input: [] }, "input");
      await bad({ model: M, input: [1, 99999] }, "input");
      await bad({ model: M, input: [[1], [99999]] }, "input[1]");
      await bad({ model: M, input: "x".repeat(2000) }, "input");
      await bad({ model: M, input: "x", dimensions: 3 }, "dimensions");
      await bad({ model: M, input: "x", encoding_format: "hex" }, "encoding_format");
      await expect(s.client.embeddings.create({ model: "nope", input: "x" })).rejects.toBeInstanceOf(
        OpenAI.NotFoundError,
      );
    });

    test("/tokenize gives transformers' ids; /detokenize gives back its greedy text", async () => {
      const post = async (p: string, body: unknown): Promise<{ status: number; json: any }> => {
        const r = await fetch(`${s.url}${p}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        return { status: r.status, json: await r.json() };
      };
      const t = await post("/tokenize", { content: ref.prompt, add_special: true });
      expect(t).toEqual({ status: 200, json: { tokens: ref.prompt_ids } });
      // llama-server's default: no special tokens added.
      expect((await post("/tokenize", { content: ref.prompt })).json.tokens).toEqual(ref.prompt_ids.slice(1));
      const pieces = await post("/tokenize", { content: ref.prompt, with_pieces: true });
      expect(pieces.json.tokens.map((p: { id: number }) => p.id)).toEqual(ref.prompt_ids.slice(1));
      expect(pieces.json.tokens.map((p: { piece: string }) => p.piece).join("")).toBe(ref.prompt);
      const d = await post("/detokenize", { tokens: ref.greedy_ids });
      expect(d).toEqual({ status: 200, json: { content: ref.greedy_text } });
      // Bad input: one-line 400s naming the field.
      for (const [p, body, param] of [
        ["/tokenize", {}, "content"],
        ["/tokenize", { content: 5 }, "content"],
        ["/detokenize", { tokens: [1, -1] }, "tokens[1]"],
        ["/detokenize", { tokens: [1, 99999] }, "tokens[1]"],
        ["/detokenize", { tokens: "1 2" }, "tokens"],
      ] as const) {
        const r = await post(p, body);
        expect(r.status).toBe(400);
        expect(r.json.error.param).toBe(param);
        expect(r.json.error.message).not.toContain("\n");
      }
    });
  },
);

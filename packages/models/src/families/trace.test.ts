// Unit tests of the tracing blocks against hand float64 computations: top-k gates, RoPE inverse frequencies
// with llama3 scaling; graph kinds' slots/states; typed errors for missing, mis-shaped and untraceable tensors.
import { Builder, evaluate } from "@poot/graph-ir";
import { describe, expect, test } from "vitest";
import type { TensorInfo } from "../checkpoint.js";
import { parseHFConfig } from "../config-hf.js";
import { TraceError } from "../errors.js";
import { inverseFrequencies } from "./attention.js";
import { TraceContext } from "./context.js";
import { topKGates } from "./moe.js";
import { traceModel } from "./trace.js";
import { ModelWeights } from "./weights.js";

const tiny = parseHFConfig({
  model_type: "llama",
  vocab_size: 8,
  hidden_size: 4,
  intermediate_size: 8,
  num_hidden_layers: 1,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  head_dim: 2,
  rms_norm_eps: 1e-5,
  tie_word_embeddings: true,
});

function info(name: string, shape: number[], dtype = "F32"): [string, TensorInfo] {
  return [name, { name, dtype, shape, byteOffset: 0, byteLength: 0, file: "mem" }];
}

function tinyWeights(override: Record<string, [number[], string?]> = {}, drop?: string): ModelWeights {
  const shapes: Record<string, [number[], string?]> = {
    "model.embed_tokens.weight": [[8, 4]],
    "model.norm.weight": [[4]],
    "model.layers.0.input_layernorm.weight": [[4]],
    "model.layers.0.post_attention_layernorm.weight": [[4]],
    "model.layers.0.self_attn.q_proj.weight": [[4, 4]],
    "model.layers.0.self_attn.k_proj.weight": [[2, 4]],
    "model.layers.0.self_attn.v_proj.weight": [[2, 4]],
    "model.layers.0.self_attn.o_proj.weight": [[4, 4]],
    "model.layers.0.mlp.gate_proj.weight": [[8, 4]],
    "model.layers.0.mlp.up_proj.weight": [[8, 4]],
    "model.layers.0.mlp.down_proj.weight": [[4, 8]],
    ...override,
  };
  return new ModelWeights(
    new Map(
      Object.entries(shapes)
        .filter(([n]) => n !== drop)
        .map(([n, [s, d]]) => info(n, s, d)),
    ),
    "hf",
    "mem",
  );
}

describe("topKGates", () => {
  test("keeps softmax probabilities of the top-k (first index on ties), zero elsewhere, optional renormalization", () => {
    const rows = [
      [0.5, 2, -1, 2, 0.1],
      [3, 1, 2, 0, -2],
    ];
    for (const renorm of [false, true]) {
      const ctx = new TraceContext(tiny, tinyWeights(), { batch: 1, tokens: 1, context: null });
      const x = ctx.b.slot("Token", "logits", "f32", [2, 5]);
      ctx.b.output("g", topKGates(ctx, x, 2, renorm));
      const g = ctx.b.build();
      const out = evaluate(g, { slots: { logits: rows.flat(), ids: [0] } }).outputs.g!.data;
      rows.forEach((r, i) => {
        const e = r.map(Math.exp),
          z = e.reduce((a, b) => a + b, 0),
          p = e.map((v) => v / z);
        const order = p
          .map((v, j) => [v, j] as const)
          .sort((a, b) => b[0] - a[0] || a[1] - b[1])
          .slice(0, 2)
          .map(([, j]) => j);
        const kept = p.map((v, j) => (order.includes(j) ? v : 0));
        const s = kept.reduce((a, b) => a + b, 0);
        kept.forEach((v, j) => expect(out[i * 5 + j]).toBeCloseTo(renorm ? v / s : v, 6));
      });
      // Row 0 ties experts 1 and 3: both are the top two, so exactly those are kept.
      expect([0, 2, 4].map((j) => out[j])).toEqual([0, 0, 0]);
    }
  });
});

describe("inverseFrequencies", () => {
  test("plain RoPE is theta^(-2i/d)", () => {
    const f = inverseFrequencies({ theta: 10000, rotaryDim: 8, scaling: null });
    expect([...f]).toEqual([1, 0.1, 0.01, 0.001].map(Math.fround));
  });

  test("llama3 scaling keeps high frequencies, divides low ones by the factor and blends between", () => {
    const s = { type: "llama3", factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositions: 8192 } as const;
    const f = inverseFrequencies({ theta: 500000, rotaryDim: 128, scaling: s });
    for (let i = 0; i < 64; i++) {
      const base = 1 / Math.pow(500000, (2 * i) / 128),
        wl = (2 * Math.PI) / base;
      if (wl < 8192 / 4) expect(f[i]).toBe(Math.fround(base));
      else if (wl > 8192) expect(f[i]).toBe(Math.fround(base / 8));
      else {
        const smooth = (8192 / wl - 1) / 3;
        const want = ((1 - smooth) * base) / 8 + smooth * base;
        expect(Math.abs(f[i]! - want) / want).toBeLessThan(1e-7);
        expect(f[i]! < base && f[i]! > base / 8).toBe(true);
      }
    }
  });
});

describe("traceModel", () => {
  test("graph kinds: prefill has no state; decode and batched decode carry KV State at a Pos slot", () => {
    const w = tinyWeights();
    const pre = traceModel(tiny, w, { kind: "prefill", tokens: 3 });
    expect(pre.states).toEqual([]);
    expect(pre.values[pre.outputs[0]!.value]!.shape).toEqual([3, 8]);
    const dec = traceModel(tiny, w, { kind: "batched-decode", batch: 2, context: 5 });
    expect(dec.states.map((s) => s.key)).toEqual(["layers.0.k", "layers.0.v"]);
    expect(dec.values[dec.states[0]!.input]!.shape).toEqual([2, 1, 5, 2]);
    const slots = dec.values.filter((v) => v.storage.kind === "slot").map((v) => [v.name, v.shape]);
    expect(slots).toEqual([
      ["ids", [2]],
      ["pos", [2]],
    ]);
    expect(dec.eqns.some((e) => e.op === "DynamicUpdateSlice")).toBe(true);
    // Primitives only: nothing outside graph-ir's primitive table.
    expect(new Set(dec.eqns.map((e) => e.op)).has("Attention")).toBe(false);
  });

  test("missing, mis-shaped and untraceable tensors are TraceErrors naming the tensor", () => {
    const err = (f: () => unknown): TraceError => {
      try {
        f();
      } catch (e) {
        expect(e).toBeInstanceOf(TraceError);
        return e as TraceError;
      }
      throw new Error("no error");
    };
    const q = "model.layers.0.self_attn.q_proj.weight";
    expect(err(() => traceModel(tiny, tinyWeights({}, q), { kind: "prefill", tokens: 2 }))).toMatchObject({
      code: "missing-tensor",
      tensor: q,
    });
    expect(err(() => traceModel(tiny, tinyWeights({ [q]: [[4, 3]] }), { kind: "prefill", tokens: 2 }))).toMatchObject({
      code: "bad-weight",
      tensor: q,
    });
    expect(
      err(() => traceModel(tiny, tinyWeights({ [q]: [[4, 4], "IQ2_XXS"] }), { kind: "prefill", tokens: 2 })),
    ).toMatchObject({ code: "wrong-dtype", tensor: q });
    expect(err(() => traceModel(tiny, tinyWeights(), { kind: "decode", context: 1, tokens: 2 }))).toMatchObject({
      code: "context-overflow",
    });
  });
});

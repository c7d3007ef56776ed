// A hand-built Llama-style decoder (same primitives a tracer emits through graph-ir's Builder):
// RMSNorm, q/k/v linears, rotate-half RoPE from tables gathered at the Pos slot, GQA attention over
// KV-cache States with a causal mask, output projection, SwiGLU MLP, tied head. Used by tests and the bench.

import { Builder, type Graph, type Ref } from "@poot/graph-ir";
import { rng } from "@poot/testkit";

/** Model dimensions. */
export interface LlamaShape {
  readonly hidden: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly intermediate: number;
  readonly layers: number;
  readonly vocab: number;
  readonly eps: number;
  readonly ropeTheta: number;
  /** KV cache capacity (and RoPE table length). */
  readonly maxSeq: number;
  /** Tokens per step (1 for decode). */
  readonly tokens: number;
  /** Weight storage dtype. */
  readonly weightDtype: "f32" | "bf16";
  /** Append a greedy argmax output `next`. */
  readonly greedy?: boolean;
}

/** A tiny shape for eval tests. */
export const TINY: LlamaShape = {
  hidden: 32,
  heads: 4,
  kvHeads: 2,
  headDim: 8,
  intermediate: 48,
  layers: 2,
  vocab: 40,
  eps: 1e-5,
  ropeTheta: 10000,
  maxSeq: 12,
  tokens: 1,
  weightDtype: "f32",
};

/** The shape of a Hugging Face Llama config.json. */
export function shapeFromConfig(c: Record<string, unknown>, maxSeq: number, tokens: number): LlamaShape {
  const n = (k: string): number => c[k] as number;
  const heads = n("num_attention_heads");
  return {
    hidden: n("hidden_size"),
    heads,
    kvHeads: n("num_key_value_heads"),
    headDim: (c.head_dim as number | undefined) ?? n("hidden_size") / heads,
    intermediate: n("intermediate_size"),
    layers: n("num_hidden_layers"),
    vocab: n("vocab_size"),
    eps: n("rms_norm_eps"),
    ropeTheta: n("rope_theta"),
    maxSeq,
    tokens,
    weightDtype: c.torch_dtype === "bfloat16" ? "bf16" : "f32",
  };
}

/** Rotate-half cos/sin tables [maxSeq, headDim] (f32). */
export function ropeTables(s: LlamaShape): { cos: Float32Array; sin: Float32Array } {
  const d = s.headDim,
    cos = new Float32Array(s.maxSeq * d),
    sin = new Float32Array(s.maxSeq * d);
  for (let p = 0; p < s.maxSeq; p++)
    for (let i = 0; i < d / 2; i++) {
      const a = p / s.ropeTheta ** ((2 * i) / d);
      cos[p * d + i] = cos[p * d + i + d / 2] = Math.cos(a);
      sin[p * d + i] = sin[p * d + i + d / 2] = Math.sin(a);
    }
  return { cos, sin };
}

/** Builds the decoder graph: slots `ids` [T] and `pos` [1]; outputs `logits` [T, V] (and `next` when greedy). */
export function buildLlama(s: LlamaShape): Graph {
  const b = new Builder();
  const T = s.tokens,
    D = s.headDim,
    H = s.heads,
    KV = s.kvHeads;
  const ids = b.slot("Token", "ids", "i32", [T]);
  const pos = b.slot("Pos", "pos", "i32", [1]);
  const tables = ropeTables(s);
  const cosT = b.computed("f32", [s.maxSeq, D], tables.cos, "rope.cos");
  const sinT = b.computed("f32", [s.maxSeq, D], tables.sin, "rope.sin");
  const zero = b.computed("i32", [], new Int32Array([0]), "zero");
  const p0 = b.reshape(pos, []);
  const positions = b.add(b.broadcast(pos, [T]), b.iota([T], 0, "i32"));
  const cos = b.reshape(b.gather(cosT, positions, 0), [1, 1, T, D]);
  const sin = b.reshape(b.gather(sinT, positions, 0), [1, 1, T, D]);
  // Causal: key j is visible to query i when j <= pos + i.
  const keep = b.cmp(
    "Le",
    b.iota([1, 1, 1, s.maxSeq], 3, "i32"),
    b.add(b.reshape(p0, [1, 1, 1, 1]), b.iota([1, 1, T, 1], 2, "i32")),
    "mask.keep",
  );
  const embed = b.const("embed", s.weightDtype, [s.vocab, s.hidden]);
  let x = b.embedding(embed, ids, "x");
  const heads = (y: Ref, n: number): Ref => b.transpose(b.reshape(y, [1, T, n, D]), [0, 2, 1, 3]);
  for (let l = 0; l < s.layers; l++) {
    x = b.scope(`layers.${l}`, () => {
      const w = (name: string, shape: number[]): Ref => b.const(`layers.${l}.${name}`, s.weightDtype, shape);
      const h = b.rmsNorm(x, w("input_norm", [s.hidden]), s.eps, "attn_in");
      const q = b.ropeRotateHalf(heads(b.linear(h, w("q", [H * D, s.hidden])), H), cos, sin, "q");
      const k = b.ropeRotateHalf(heads(b.linear(h, w("k", [KV * D, s.hidden])), KV), cos, sin, "k");
      const v = heads(b.linear(h, w("v", [KV * D, s.hidden])), KV);
      const kc = b.state(`layers.${l}.k_cache`, "f32", [1, KV, s.maxSeq, D]);
      const vc = b.state(`layers.${l}.v_cache`, "f32", [1, KV, s.maxSeq, D]);
      const kc2 = b.dynamicUpdateSlice(kc, k, [zero, zero, p0, zero], "k_cache_out");
      const vc2 = b.dynamicUpdateSlice(vc, v, [zero, zero, p0, zero], "v_cache_out");
      b.setState(kc, kc2);
      b.setState(vc, vc2);
      const att = b.attentionMasked(
        q,
        b.repeatKv(kc2, H / KV, 1),
        b.repeatKv(vc2, H / KV, 1),
        { scale: 1 / Math.sqrt(D), mask: { select: keep } },
        "attn",
      );
      const o = b.linear(
        b.reshape(b.transpose(att, [0, 2, 1, 3]), [T, H * D]),
        w("o", [s.hidden, H * D]),
        undefined,
        "attn_out",
      );
      const x1 = b.add(x, o, "resid1");
      const h2 = b.rmsNorm(x1, w("post_norm", [s.hidden]), s.eps, "mlp_in");
      const act = b.swiglu(
        b.linear(h2, w("gate", [s.intermediate, s.hidden])),
        b.linear(h2, w("up", [s.intermediate, s.hidden])),
        "act",
      );
      return b.add(x1, b.linear(act, w("down", [s.hidden, s.intermediate])), "resid2");
    });
  }
  const logits = b.linear(b.rmsNorm(x, b.const("norm", s.weightDtype, [s.hidden]), s.eps), embed, undefined, "logits");
  b.output("logits", logits);
  if (s.greedy === true) b.output("next", b.argmax(logits, -1, false, "next"));
  return b.build();
}

/** Deterministic pseudo-random weights in [-scale, scale) (mulberry32). */
export function randomData(n: number, seed: number, scale = 0.5): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n }, () => (r() * 2 - 1) * scale);
}

// A one-layer Llama-style decoder graph and its bindings, for end-to-end tests through graph-plan.

import { Builder } from "@poot/graph-ir";
import type { DType, Graph, PackedFormat, Ref } from "@poot/graph-ir";
import { randomBlocks } from "./formats.js";
import { randF32, rng } from "./helpers.js";

/** Decoder dimensions. */
export interface Dims {
  readonly T: number;
  readonly hidden: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly ffn: number;
  readonly maxSeq: number;
  readonly wDtype: "f32" | "bf16" | PackedFormat;
  /** RoPE pairing: rotate-half (default) or interleaved pairs, as a GGUF llama's stored Q/K order takes (decision 1690). */
  readonly rope?: "half" | "interleaved";
}

/** One Llama-style layer (RMSNorm, q/k/v, rotate-half RoPE at the Pos slot, KV-cache states, causal GQA, o, SwiGLU) and a head. */
export function decoder(d: Dims): Graph {
  const b = new Builder();
  const { T, heads: H, kvHeads: KV, headDim: D } = d;
  const ids = b.slot("Token", "ids", "i32", [T]);
  const pos = b.slot("Pos", "pos", "i32", [1]);
  const cosT = b.const("rope.cos", "f32", [d.maxSeq, D]);
  const sinT = b.const("rope.sin", "f32", [d.maxSeq, D]);
  const zero = b.computed("i32", [], new Int32Array([0]), "zero");
  const p0 = b.reshape(pos, []);
  const positions = b.add(b.broadcast(pos, [T]), b.iota([T], 0, "i32"));
  const cos = b.reshape(b.gather(cosT, positions, 0), [1, 1, T, D]);
  const sin = b.reshape(b.gather(sinT, positions, 0), [1, 1, T, D]);
  const keep = b.cmp(
    "Le",
    b.iota([1, 1, 1, d.maxSeq], 3, "i32"),
    b.add(b.reshape(p0, [1, 1, 1, 1]), b.iota([1, 1, T, 1], 2, "i32")),
  );
  const wd: DType = typeof d.wDtype === "string" ? d.wDtype : { packed: d.wDtype };
  const w = (name: string, shape: number[]): Ref => b.const(name, shape.length === 1 ? "f32" : wd, shape);
  const embed = w("embed", [40, d.hidden]);
  const x = b.embedding(embed, ids, "x");
  const split = (y: Ref, n: number): Ref => b.transpose(b.reshape(y, [1, T, n, D]), [0, 2, 1, 3]);
  const h = b.rmsNorm(x, w("ln1", [d.hidden]), 1e-5);
  const rope = (x: Ref) => (d.rope === "interleaved" ? b.ropeInterleaved(x, cos, sin) : b.ropeRotateHalf(x, cos, sin));
  const q = rope(split(b.linear(h, w("wq", [H * D, d.hidden])), H));
  const k = rope(split(b.linear(h, w("wk", [KV * D, d.hidden])), KV));
  const v = split(b.linear(h, w("wv", [KV * D, d.hidden])), KV);
  const kc = b.state("k_cache", "f32", [1, KV, d.maxSeq, D]);
  const vc = b.state("v_cache", "f32", [1, KV, d.maxSeq, D]);
  const kc2 = b.dynamicUpdateSlice(kc, k, [zero, zero, p0, zero]);
  const vc2 = b.dynamicUpdateSlice(vc, v, [zero, zero, p0, zero]);
  b.setState(kc, kc2);
  b.setState(vc, vc2);
  const att = b.attentionMasked(q, b.repeatKv(kc2, H / KV, 1), b.repeatKv(vc2, H / KV, 1), {
    scale: 1 / Math.sqrt(D),
    mask: { select: keep },
  });
  const o = b.linear(b.reshape(b.transpose(att, [0, 2, 1, 3]), [T, H * D]), w("wo", [d.hidden, H * D]));
  const x1 = b.add(x, o);
  const h2 = b.rmsNorm(x1, w("ln2", [d.hidden]), 1e-5);
  const act = b.swiglu(b.linear(h2, w("gate", [d.ffn, d.hidden])), b.linear(h2, w("up", [d.ffn, d.hidden])));
  const x2 = b.add(x1, b.linear(act, w("down", [d.hidden, d.ffn])));
  const logits = b.linear(b.rmsNorm(x2, w("lnf", [d.hidden]), 1e-5), embed);
  b.output("logits", logits);
  b.output("next", b.argmax(logits, -1));
  return b.build();
}

/** Random weights and states, real RoPE tables, token ids and the Pos slot. */
export function bindings(g: Graph, d: Dims, pos: number, seed: number) {
  const r = rng(seed);
  const consts: Record<string, Float32Array> = {}; // packed weights hold their bytes
  const state: Record<string, Float32Array> = {};
  for (const v of g.values) {
    const n = v.shape.reduce((a, x) => a * x, 1);
    if (v.storage.kind === "const")
      consts[v.storage.key] =
        typeof v.dtype === "object"
          ? (randomBlocks(r, v.dtype.packed, n / v.dtype.packed.blockSize) as never)
          : randF32(r, n, 0.5);
    if (v.storage.kind === "state") state[v.storage.key] = randF32(r, n, 0.5);
  }
  // Real RoPE tables (angles p / 10000^(2i/D)) so the rotation is a rotation.
  const D = d.headDim;
  for (let p = 0; p < d.maxSeq; p++)
    for (let i = 0; i < D / 2; i++) {
      const a = p / 10000 ** ((2 * i) / D);
      consts["rope.cos"]![p * D + i] = consts["rope.cos"]![p * D + i + D / 2] = Math.cos(a);
      consts["rope.sin"]![p * D + i] = consts["rope.sin"]![p * D + i + D / 2] = Math.sin(a);
    }
  const ids = Int32Array.from({ length: d.T }, (_, i) => (i * 7 + 3) % 40);
  return { consts, state, slots: { ids, pos: Int32Array.of(pos) } };
}

/** The default tiny shape. */
export const BASE: Dims = { T: 1, hidden: 32, heads: 4, kvHeads: 2, headDim: 8, ffn: 48, maxSeq: 12, wDtype: "f32" };

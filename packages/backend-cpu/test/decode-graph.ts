// A one-layer attention decode step in miniature (embedding, RMSNorm, q/k/v projections, a KV cache State written at
// the Pos slot, masked softmax attention, SiLU MLP, logits) with seeded weights, for the step-protocol tests.
import { Builder, type Graph, type HostData } from "@poot/graph-ir";
import { seededFloats } from "@poot/executor/conformance";

/** Sizes of the miniature model. */
export const D = 64,
  S = 16,
  V = 96,
  F = 128;

/** The decode graph: slots `token` [1], `pos` [1], `mask` [1, S] (additive); states `k`, `v` [S, D]; output `logits` [1, V]. */
export function decodeGraph(): Graph {
  const b = new Builder();
  const token = b.slot("Token", "token", "i32", [1]);
  const pos = b.slot("Pos", "pos", "i32", [1]);
  const mask = b.slot("Mask", "mask", "f32", [1, S]);
  const x = b.embedding(b.const("embed", "f32", [V, D]), token);
  const h = b.rmsNorm(x, b.const("norm", "f32", [D]), 1e-5);
  const q = b.linear(h, b.const("wq", "f32", [D, D]));
  const k = b.linear(h, b.const("wk", "f32", [D, D]));
  const v = b.linear(h, b.const("wv", "f32", [D, D]));
  const kc = b.state("k", "f32", [S, D]);
  const vc = b.state("v", "f32", [S, D]);
  const zero = b.computed("i32", [], new Int32Array([0]));
  const at = b.reshape(pos, []);
  const keys = b.dynamicUpdateSlice(kc, k, [at, zero]);
  const vals = b.dynamicUpdateSlice(vc, v, [at, zero]);
  b.setState(kc, keys);
  b.setState(vc, vals);
  const scores = b.add(b.mul(b.matmul(q, b.transpose(keys, [1, 0])), 0.125), mask);
  const ctx = b.matmul(b.softmax(scores), vals);
  const y = b.add(x, b.linear(ctx, b.const("wo", "f32", [D, D])));
  const m = b.linear(
    b.mul(b.silu(b.linear(y, b.const("wg", "f32", [F, D]))), b.linear(y, b.const("wu", "f32", [F, D]))),
    b.const("wd", "f32", [D, F]),
  );
  b.output("logits", b.linear(b.add(y, m), b.const("head", "f32", [V, D])));
  return b.build();
}

const SHAPES: Record<string, number> = {
  embed: V * D,
  norm: D,
  wq: D * D,
  wk: D * D,
  wv: D * D,
  wo: D * D,
  wg: F * D,
  wu: F * D,
  wd: D * F,
  head: V * D,
};

/** Seeded weights of the decode graph. */
export function decodeWeights(): Record<string, HostData> {
  return Object.fromEntries(Object.entries(SHAPES).map(([k, n], i) => [k, seededFloats(100 + i, n, -0.3, 0.3)]));
}

/** The slot values of decode step `t`: token, position t, the mask that admits positions 0..t. */
export function stepSlots(t: number): { token: number[]; pos: number[]; mask: number[] } {
  return { token: [(t * 37 + 5) % V], pos: [t], mask: Array.from({ length: S }, (_, j) => (j <= t ? 0 : -1e9)) };
}

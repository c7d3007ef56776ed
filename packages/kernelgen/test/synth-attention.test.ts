// The attention generator (decode, prefill and chunked prefill; GQA; causal and sliding-window masks; soft-cap;
// both KV layouts; bf16 caches) in the interpreter against graph-ir primitives evaluated in float64.

import { Builder, evaluate } from "@poot/graph-ir";
import { describe, expect, it } from "vitest";
import { attentionLanes, synthesizeAttention } from "@poot/kernelgen";
import type { AttentionRequest, SynthCaps } from "@poot/kernelgen";
import { expectClose, poisoned, randBf16, randF32, rng, run } from "./helpers.js";

interface Case extends Omit<AttentionRequest, "name" | "scale"> {
  readonly pos0: number;
  readonly kvLen: number;
}

/** Reference: scores, soft-cap, boolean mask (per the documented visibility rule), softmax, weighted values. */
function reference(c: Case, q: ArrayLike<number>, k: ArrayLike<number>, v: ArrayLike<number>, scale: number) {
  const { queries: Tq, heads: H, kvHeads: Hkv, headDim: D, maxKeys: S, kvLen: L } = c;
  const Dv = c.valueDim ?? D;
  const kvDt = c.kvDtype === "bf16" ? "bf16" : "f32";
  const g = new Builder();
  const qh = g.transpose(g.const("q", "f32", [Tq, H, D]), [1, 0, 2]); // [H, Tq, D]
  const cache = (key: string, w: number) => {
    const raw = g.f32(g.const(key, kvDt, c.kvLayout === "hsd" ? [Hkv, S, w] : [S, Hkv, w]));
    const hsd = c.kvLayout === "hsd" ? raw : g.transpose(raw, [1, 0, 2]); // [Hkv, S, w]
    return g.repeatKv(g.slice(hsd, [0, 0, 0], [Hkv, L, w]), H / Hkv, 0); // [H, L, w]
  };
  const kh = cache("k", D), vh = cache("v", Dv);
  let s = g.mul(g.matmul(qh, g.transpose(kh, [0, 2, 1])), scale);
  if (c.softCap !== undefined) s = g.mul(g.tanh(g.div(s, c.softCap)), c.softCap);
  const mask = new Uint8Array(Tq * L);
  for (let t = 0; t < Tq; t++) {
    const p = c.pos0 + t;
    for (let j = 0; j < L; j++) mask[t * L + j] = (!c.causal || j <= p) && (c.window === undefined || j > p - c.window) ? 1 : 0;
  }
  const masked = g.select(g.broadcast(g.cast(g.const("mask", "u8", [Tq, L]), "bool"), [H, Tq, L]), s, -Infinity);
  g.output("o", g.transpose(g.matmul(g.softmax(masked), vh), [1, 0, 2]));
  return evaluate(g.build(), { consts: { q, k, v, mask } }).outputs.o!.data;
}

function check(c: Case, caps: SynthCaps, seed: number) {
  const r = rng(seed);
  const Dv = c.valueDim ?? c.headDim;
  const scale = 1 / Math.sqrt(c.headDim);
  const q = randF32(r, c.queries * c.heads * c.headDim, 2);
  const nk = c.maxKeys * c.kvHeads;
  const k = c.kvDtype === "bf16" ? randBf16(r, nk * c.headDim) : randF32(r, nk * c.headDim);
  const v = c.kvDtype === "bf16" ? randBf16(r, nk * Dv) : randF32(r, nk * Dv);
  const s = synthesizeAttention({ ...c, name: "attn", scale }, caps);
  const out = poisoned(s.kernel, "out", c.queries * c.heads * Dv);
  run(s.kernel, { grid: [...s.grid], buffers: { q, k, v, meta: Int32Array.from([c.pos0, c.kvLen]), out } });
  const want = reference(c, q, k, v, scale);
  // Outputs are convex combinations of values in [-1, 1]: accumulation-order noise is bounded by ~1e-5 absolute.
  expectClose(out as Float32Array, want, 1, 1e-5);
  return s;
}

const CAPS: SynthCaps = { maxWorkgroup: 64, sharedBytes: 16384 };

describe("synthesized attention", () => {
  it("decode: one query at the last position, GQA 4:2, token-major cache with spare capacity", () => {
    check({ queries: 1, heads: 4, kvHeads: 2, headDim: 8, maxKeys: 40, causal: true, pos0: 22, kvLen: 23 }, CAPS, 1);
  });

  it("prefill: causal over 9 tokens, MQA (8 heads, 1 kv head), head-major bf16 cache", () => {
    check({ queries: 9, heads: 8, kvHeads: 1, headDim: 16, maxKeys: 9, causal: true, kvLayout: "hsd", kvDtype: "bf16", pos0: 0, kvLen: 9 }, CAPS, 2);
  });

  it("chunked prefill with a sliding window and soft-cap, value dim ≠ head dim", () => {
    check({ queries: 3, heads: 2, kvHeads: 2, headDim: 6, valueDim: 5, maxKeys: 16, causal: true, window: 4, softCap: 0.7, pos0: 7, kvLen: 10 }, CAPS, 3);
  });

  it("non-causal (encoder-style) attention, one key, and fewer lanes when workgroup memory is small", () => {
    check({ queries: 2, heads: 1, kvHeads: 1, headDim: 4, maxKeys: 1, causal: false, pos0: 0, kvLen: 1 }, CAPS, 4);
    const small: SynthCaps = { maxWorkgroup: 256, sharedBytes: 4 * (4 * (8 + 2) + 8) };
    expect(attentionLanes(8, 8, small)).toBe(4);
    const s = check({ queries: 1, heads: 2, kvHeads: 1, headDim: 8, maxKeys: 30, causal: true, pos0: 29, kvLen: 30 }, small, 5);
    expect(s.lanes).toBe(4);
  });

  it("refuses heads that are not a multiple of kv heads and caps that cannot hold one lane", () => {
    expect(() => synthesizeAttention({ name: "a", queries: 1, heads: 3, kvHeads: 2, headDim: 4, maxKeys: 4, causal: true, scale: 1 }, CAPS)).toThrow(expect.objectContaining({ code: "bad_shape" }));
    expect(() => synthesizeAttention({ name: "a", queries: 1, heads: 1, kvHeads: 1, headDim: 64, maxKeys: 4, causal: true, scale: 1 }, { maxWorkgroup: 64, sharedBytes: 256 })).toThrow(expect.objectContaining({ code: "exceeds_caps" }));
  });
});

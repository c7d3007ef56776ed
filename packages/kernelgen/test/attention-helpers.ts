// The attention tests' oracle and runner (synth-attention.test.ts, synth-attention-split.test.ts): a float64
// reference built from graph-ir primitives on the buffers as a case lays them out, and a check that runs the
// synthesized kernel (and its flash-decode combine) in the interpreter against it.

import { Builder, bf16BitsToF32, evaluate, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from "@poot/graph-ir";
import { synthesizeAttention } from "@poot/kernelgen";
import type { AttentionRequest, SynthCaps } from "@poot/kernelgen";
import { expectClose, poisoned, randBf16, randF32, rng, run } from "./helpers.js";

/** An attention case: the request without name and scale, and where each query's visible keys end. */
export interface Case extends Omit<AttentionRequest, "name" | "scale"> {
  /** Query t's last visible key is pos0 + t (the runtime `limit`). */
  readonly pos0: number;
  /** Per-batch offsets added to pos0 (ragged live lengths across the batch). */
  readonly ragged?: readonly number[];
}

/**
 * Reference on logical [B, H, T, D] tensors built by graph-ir from the buffers as the case lays them out:
 * scores, soft-cap, the documented visibility mask, softmax, weighted values.
 */
export function reference(c: Case, q: ArrayLike<number>, k: ArrayLike<number>, v: ArrayLike<number>, scale: number) {
  const { queries: Tq, heads: H, kvHeads: Hkv, headDim: D, keys: S } = c;
  const B = c.batch ?? 1;
  const Dv = c.valueDim ?? D;
  const kvDt = c.kvDtype ?? "f32";
  const g = new Builder();
  const headMajorQ = c.strides?.q !== undefined;
  const qh = g.f32(
    headMajorQ
      ? g.const("q", c.qDtype ?? "f32", [B, H, Tq, D])
      : g.transpose(g.const("q", c.qDtype ?? "f32", [B, Tq, H, D]), [0, 2, 1, 3]),
  );
  const cache = (key: string, w: number) => {
    const raw = g.f32(g.const(key, kvDt, c.kvLayout === "hsd" ? [B, Hkv, S, w] : [B, S, Hkv, w]));
    const hsd = c.kvLayout === "hsd" ? raw : g.transpose(raw, [0, 2, 1, 3]);
    return g.repeatKv(hsd, H / Hkv, 1); // [B, H, S, w]
  };
  const kh = cache("k", D),
    vh = cache("v", Dv);
  let s = g.mul(g.matmul(qh, g.transpose(kh, [0, 1, 3, 2])), scale);
  if (c.softCap !== undefined) s = g.mul(g.tanh(g.div(s, c.softCap)), c.softCap);
  const mask = new Uint8Array(B * Tq * S);
  for (let bi = 0; bi < B; bi++) {
    for (let t = 0; t < Tq; t++) {
      const p = c.pos0 + t + (c.ragged?.[bi] ?? 0);
      for (let j = 0; j < S; j++)
        mask[(bi * Tq + t) * S + j] =
          (c.mask === "none" || j <= p) && (c.mask !== "sliding" || j > p - c.window!) ? 1 : 0;
    }
  }
  const masked = g.select(
    g.broadcast(g.cast(g.reshape(g.const("mask", "u8", [B * Tq, S]), [B, 1, Tq, S]), "bool"), [B, H, Tq, S]),
    s,
    -Infinity,
  );
  const o = g.matmul(g.softmax(masked), vh); // [B, H, Tq, Dv]
  const stored = c.outDtype === undefined || c.outDtype === "f32" ? o : g.f32(g.cast(o, c.outDtype));
  g.output("o", headMajorQ ? stored : g.transpose(stored, [0, 2, 1, 3]));
  return evaluate(g.build(), { consts: { q, k, v, mask } }).outputs.o!.data;
}

/**
 * Synthesizes the case for `caps`, runs it (and its combine dispatch when split) in the interpreter on seeded random
 * inputs, and compares with {@link reference}; returns the synthesized kernel.
 */
export function check(c: Case, caps: SynthCaps, seed: number) {
  const r = rng(seed);
  const B = c.batch ?? 1;
  const Dv = c.valueDim ?? c.headDim;
  const scale = 1 / Math.sqrt(c.headDim);
  const q = stored(randF32(r, B * c.queries * c.heads * c.headDim, 2), c.qDtype);
  const nk = B * c.keys * c.kvHeads;
  const k = c.kvDtype === "bf16" ? randBf16(r, nk * c.headDim) : stored(randF32(r, nk * c.headDim), c.kvDtype);
  const v = c.kvDtype === "bf16" ? randBf16(r, nk * Dv) : stored(randF32(r, nk * Dv), c.kvDtype);
  const s = synthesizeAttention({ ...c, name: "attn", scale }, caps);
  const limit = Int32Array.from(
    { length: B * c.queries },
    (_, i) => c.pos0 + (i % c.queries) + (c.ragged?.[Math.floor(i / c.queries)] ?? 0),
  );
  const inputs = { q, k, v, ...(c.mask === "none" ? {} : { limit }) };
  let out;
  if (s.split === undefined) {
    out = poisoned(s.kernel, "out", B * c.queries * c.heads * Dv);
    run(s.kernel, { grid: [...s.grid], buffers: { ...inputs, out } });
  } else {
    // Flash-decode: partials into a poisoned transient, then the combine dispatch into a poisoned out.
    const part = poisoned(s.kernel, "part", s.split.partElements);
    run(s.kernel, { grid: [...s.grid], buffers: { ...inputs, part } });
    out = poisoned(s.split.combine.kernel, "out", B * c.queries * c.heads * Dv);
    run(s.split.combine.kernel, { grid: [...s.split.combine.grid], buffers: { part, out } });
  }
  const want = reference(c, q, k, v, scale);
  // Outputs are convex combinations of values in [-1, 1]: accumulation-order noise is bounded by ~1e-5 absolute,
  // plus one ulp of a 16-bit output type (f32 noise may cross its rounding boundary).
  const od = c.outDtype ?? "f32";
  const got = Array.from(out as ArrayLike<number>, (x) =>
    od === "bf16" ? bf16BitsToF32(x) : od === "f16" ? f16BitsToF32(x) : x,
  );
  const ulp = od === "bf16" ? 2 ** -7 : od === "f16" ? 2 ** -10 : 0;
  expectClose(
    got,
    want,
    Array.from(want, (w) => 1 + (ulp * Math.abs(w)) / 1e-5),
    1e-5,
  );
  return s;
}

/** f32 values stored as `dt` (16-bit types as bits). */
function stored(v: Float32Array, dt: AttentionRequest["qDtype"]): Float32Array | Uint16Array {
  if (dt !== undefined && dt !== "f32" && dt !== "bf16" && dt !== "f16") throw new Error(`attention storage ${dt}`);
  return dt === undefined || dt === "f32" ? v : Uint16Array.from(v, dt === "bf16" ? f32ToBf16Bits : f32ToF16Bits);
}

/** Caps of a small GPU-like device: 64-lane workgroups, 16 KiB of workgroup memory. */
export const CAPS: SynthCaps = { maxWorkgroup: 64, sharedBytes: 16384 };

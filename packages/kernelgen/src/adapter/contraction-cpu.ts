// The CPU (serial threads + SIMD loads) dot product of an inline contraction (a contraction whose epilogue reads other
// accumulators: RoPE, KV-cache writes): one thread computes A[row, :] · B[n, :] with four vec4 sums over load4 reads,
// packed weights decoded four at a time (decode-unrolled.ts), as the dequant GEMV does (docs/decisions/0951).

import type { Arr, Builder, Val } from "@poot/kernel-dsl";
import { isPacked } from "@poot/graph-ir";
import type { Access } from "@poot/graph-plan";
import { blockDecoder } from "../synth/decode.js";
import { unrolledDecoder } from "../synth/decode-unrolled.js";
import { sum4x4 } from "../synth/dequant-cpu.js";
import { accessIndex } from "./access.js";
import type { Coords } from "./region-emit.js";

/** True when {@link simdDot} serves B: A's rows contiguous, B a packed [N, K] (blocks of a multiple of 4) or a dense [N, K] with K % 4 = 0. */
export function simdDotApplies(A: Access, B: Access, transposeB: boolean): boolean {
  const K = A.shape[A.shape.length - 1] as number;
  if (A.strides[A.strides.length - 1] !== 1 || B.shape.length !== 2) return false;
  if (isPacked(B.dtype)) return B.dtype.packed.blockSize % 4 === 0 && K % B.dtype.packed.blockSize === 0;
  return (
    transposeB && B.strides[1] === 1 && K % 4 === 0 && (B.dtype === "f32" || B.dtype === "bf16" || B.dtype === "f16")
  );
}

/**
 * Emits the dot product of A at `aCoords` (its K coordinate ignored) with row `n` of B (`bytes` a u8 view when B is
 * packed), summed in four vec4 partial sums; returns the f32 total.
 */
export function simdDot(b: Builder, A: Access, a: Arr, B: Access, w: Arr, aCoords: Coords, n: Val<"u32">): Val<"f32"> {
  const { let_, var_, for_, u32, f32 } = b;
  const K = A.shape[A.shape.length - 1] as number;
  const aRow = accessIndex(b, A, [...aCoords.slice(0, -1), u32(0)]);
  const ps = [0, 1, 2, 3].map((q) => var_(b.vec("vec4<f32>", f32(0), f32(0), f32(0), f32(0)), `sd${q}`));
  const add = (q: number, x: Val<"vec4<f32>">, wv: Val<"vec4<f32>">): void => ps[q]!.set(ps[q]!.add(x.mul(wv)));
  if (isPacked(B.dtype)) {
    const f = B.dtype.packed;
    const nb = K / f.blockSize;
    const dec = unrolledDecoder(b, f, w as Arr<"u32">, blockDecoder(b, f, w as Arr<"u32">).binary);
    for_(
      u32(0),
      nb,
      1,
      (blk) => {
        dec.block(let_(n.mul(nb).add(blk).mul(f.bytesPerBlock), "base"));
        const k0 = let_(blk.mul(f.blockSize).add(aRow), "k0");
        for (let i = 0; i < f.blockSize; i += 4) add((i / 4) % 4, a.at4(k0.add(i), "vec4<f32>"), dec.element4(i));
      },
      "blk",
    );
  } else {
    const wRow = accessIndex(b, B, [n, u32(0)]);
    const K16 = K - (K % 16);
    const quad = (kk: Val<"u32">, q: number): void =>
      add(q, a.at4(aRow.add(kk).add(4 * q), "vec4<f32>"), w.at4(wRow.add(kk).add(4 * q), "vec4<f32>"));
    if (K16 > 0) for_(u32(0), K16, 16, (kk) => [0, 1, 2, 3].forEach((q) => quad(kk, q)), "k");
    if (K > K16) for_(u32(K16), K, 4, (kk) => quad(kk, 0), "k4");
  }
  return sum4x4(b, ps);
}

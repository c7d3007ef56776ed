// The CPU (serial-thread) body of the dequant GEMV: one thread per output row walks its blocks, each block unrolled
// (decode-unrolled.ts). With SIMD loads (caps.simdLoads) four consecutive weights decode as one vec4<f32> and
// multiply four x values at once into four independent vec4 sums (docs/decisions/0951); without, scalar partial sums.

import type { Arr, Builder, Val, Var } from "@poot/kernel-dsl";
import type { PackedFormat } from "@poot/graph-ir";
import type { BlockDecoder } from "./decode.js";
import { unrolledDecoder } from "./decode-unrolled.js";

/** What the serial loop needs from the dequant GEMV kernel being built. */
export interface SerialDequantParts {
  readonly f: PackedFormat;
  readonly Ws: readonly Arr<"u32">[];
  readonly decs: readonly BlockDecoder[];
  readonly x: Arr<"f32">;
  /** Per x row: the element offset of the row in x. */
  readonly xRow: readonly Val<"u32">[];
  /**
   * Per x row: the sums this thread leaves for the epilogue, `accs[j][i · heads + h]` for row `ns[i]` (or `n`) of
   * weight h.
   */
  readonly accs: readonly (readonly Var<"f32">[])[];
  readonly n: Val<"u32">;
  /** Several rows of W sharing each load of x (decode, decision 2460); default `[n]`. */
  readonly ns?: readonly Val<"u32">[];
  /** Accumulate with fused multiply-adds (`fma`, rounded once: native targets, decision 2461). */
  readonly fma?: boolean;
  readonly nb: number | Val<"u32">;
  /** Vectorize (the caps have SIMD loads). */
  readonly simd: boolean;
  /** Lanes of the SIMD vectors: 4 (default), or 8/16 on targets whose caps report them (decision 2310). */
  readonly lanes?: 4 | 8 | 16;
  /** Partial sums per x row and weight with SIMD (default 4; fewer when many x rows already give independent sums). */
  readonly partials?: number;
}

/** `lanes` f32 lanes of zero. */
export const zeroVec = <N extends 4 | 8 | 16>(b: Builder, lanes: N): Val<`vec${N}<f32>`> =>
  b.vec(`vec${lanes}<f32>`, ...Array.from({ length: lanes }, () => b.f32(0)));

/**
 * Horizontal sum of four vecN partial sums (or one): pairwise ((a0 + a1) + (a2 + a3)), then the lanes as a tree (each
 * lane i of the lower half plus lane i + N/2, halving until one is left). For vec4 that is {@link sum4x4}'s order.
 */
export function sumWide(b: Builder, ps: readonly Val<`vec${4 | 8 | 16}<f32>`>[]): Val<"f32"> {
  const v = b.let_(
    ps.length === 1 ? ps[0]! : ps.length === 2 ? ps[0]!.add(ps[1]!) : ps[0]!.add(ps[1]!).add(ps[2]!.add(ps[3]!)),
    "hsum",
  );
  if (v.type === "vec4<f32>") return v.x.add(v.y).add(v.z.add(v.w));
  let lanes = Array.from({ length: Number(v.type.slice(3, v.type.indexOf("<"))) }, (_, i) => v.lane(i));
  while (lanes.length > 1) {
    const h = lanes.length / 2;
    lanes = lanes.slice(0, h).map((l, i) => l.add(lanes[i + h]!));
  }
  return lanes[0]!;
}

/** Horizontal sum of four vec4 partial sums: pairwise ((a0 + a1) + (a2 + a3)), then lanes (x + y) + (z + w). */
export function sum4x4(b: Builder, ps: readonly Val<"vec4<f32>">[]): Val<"f32"> {
  const v = b.let_(ps[0]!.add(ps[1]!).add(ps[2]!.add(ps[3]!)), "hsum");
  return v.x.add(v.y).add(v.z.add(v.w));
}

/** Emits the row loop into the current block (inside `if (live)`); leaves each row's sums in `accs`. */
export function serialDequantLoop(b: Builder, p: SerialDequantParts): void {
  const { let_, var_, for_, u32, f32 } = b;
  const { f, n, nb, x, xRow, accs } = p;
  const ns = p.ns ?? [n];
  // One decoder per (W row, weight): each keeps its own block's memoized loads.
  const unrolled = ns.flatMap(() => p.Ws.map((W, h) => unrolledDecoder(b, f, W, (p.decs[h] as BlockDecoder).binary)));
  const heads = p.Ws.length;
  const W = p.lanes ?? 4;
  const simd = p.simd && f.blockSize % W === 0;
  // U partial sums per row and weight (vec4 when SIMD), used round-robin over the block's elements.
  const U = simd ? (p.partials ?? 4) : f.blockSize % 4 === 0 ? 4 : 1;
  // (Typed as f32 sums: the vec4 and f32 forms take the same add/mul calls.)
  const parts = accs.map((row, j) =>
    row.map((acc, h) =>
      Array.from({ length: U }, (_, q) =>
        simd
          ? (var_(zeroVec(b, W), `vacc${j}_${h}_${q}`) as unknown as Var<"f32">)
          : q === 0
            ? acc
            : var_(f32(0), `part${j}_${h}_${q}`),
      ),
    ),
  );
  for_(
    u32(0),
    nb,
    1,
    (blk) => {
      const bases = ns.map((ni) => let_(ni.mul(nb).add(blk).mul(f.bytesPerBlock), "base"));
      unrolled.forEach((dec, c) => dec.block(bases[Math.floor(c / heads)]!));
      const k0 = let_(blk.mul(f.blockSize), "k0");
      const xk = xRow.map((xr) => let_(k0.add(xr), "xk"));
      const step = simd ? W : 1;
      for (let i = 0; i < f.blockSize; i += step) {
        const q = (i / step) % U;
        const ws = unrolled.map((dec) => (simd ? (dec.elementN(i, W) as unknown as Val<"f32">) : dec.element(i)));
        parts.forEach((row, j) => {
          const xv = simd
            ? (x.atVec((xk[j] as Val<"u32">).add(i), `vec${W}<f32>`) as unknown as Val<"f32">)
            : let_(x.at((xk[j] as Val<"u32">).add(i)), "xv");
          row.forEach((ps, c) => ps[q]!.set(p.fma === true ? b.fma(xv, ws[c]!, ps[q]!) : ps[q]!.add(xv.mul(ws[c]!))));
        });
      }
    },
    "blk",
  );
  parts.forEach((row, j) =>
    row.forEach((ps, h) => {
      const acc = accs[j]![h]!;
      if (simd) acc.set(sumWide(b, ps as unknown as Val<"vec4<f32>">[]));
      else if (U > 1) acc.set(acc.add(ps[1]!).add(ps[2]!.add(ps[3]!)));
    }),
  );
}

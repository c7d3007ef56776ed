// `fast` Q8_0 GEMMs over an interleaved slab of weight rows (decision 2390): a workgroup first copies 16 weight rows
// (all their blocks) into its scratch slab with the rows interleaved per 4 bytes, as ggml's repack does at load time,
// so that one 64-byte load holds 4 bytes of each of 16 weight rows and one broadcast dword of an x row feeds a
// `vpdpbusd` of all 16; then every x row of the GEMM is dotted with the slab, 8 x rows per pass.

import type { Arr, Builder, Val } from "@poot/kernel-dsl";
import { f16At, spread, zeroF, zeroI, type FastCol, type FastParts } from "./gemv-int8.js";
import { fastQ4_KSlabLoop, fastQ6_KSlabLoop, KSLAB_BLOCK, q4kSlabRepack, q6kSlabRepack } from "./gemv-int8-kslab.js";

/** Weight rows (lanes) of a slab: one vec16 lane per weight row (all heads counted). */
export const SLAB_COLS = 16;
/** Bytes of one block of a slab: 16 f32 scales, then 8 × 64 bytes (dword i of the block's quants of 16 rows). */
const SLAB_BLOCK = 64 + 8 * 64;

/**
 * The register tile of the slab GEMMs, and from which M a `fast` GEMM takes them (decisions 2390, 2430): below
 * `minM` the copy into the slab costs more than it saves (the 2340 / 2380 / 2403 tiles run there).
 */
export const SLAB_TILE = { rows: 8, minM: 16 } as const;

/**
 * A format's slab GEMM (decisions 2390, 2430): its slab bytes per `elems` of K, the copy of 16 weight rows into the
 * workgroup's slab (written as words at word `at`) and the loop of x rows against it (read as bytes at byte `at`).
 */
export interface SlabKernels {
  readonly elems: number;
  readonly bytes: number;
  readonly repack: (b: Builder, cols: readonly FastCol[], t: Arr<"u32">, at: Val<"u32">, K: Val<"u32">) => void;
  readonly loop: (b: Builder, p: FastParts, tb: Arr<"u8">, at: Val<"u32">) => void;
}

/** The slab bytes of one workgroup of a `fast` GEMM of `format` (one with a slab) with rows K long. */
export function slabBytes(format: string, K: number): number {
  const s = SLABS[format]!;
  return (K / s.elems) * s.bytes;
}

/** Whether the `fast` GEMVs of `format` take slab buffers (t, tb, after y): Q8_0's (2390), Q4_K's and Q6_K's (2430). */
export function hasSlab(format: string): boolean {
  return SLABS[format] !== undefined;
}

/**
 * The scratch bytes of the slabs of a `fast` GEMM of `format` over an [M, K] x in `groups` workgroups: null where
 * its kernel has no slab buffers, 0 where M does not take the slab path (the kernel then never touches them).
 */
export function nativeSlabScratch(format: string, M: number, K: number, groups: number): number | null {
  if (!hasSlab(format)) return null;
  return M >= SLAB_TILE.minM ? groups * slabBytes(format, K) : 0;
}

/**
 * Copies the {@link SLAB_COLS} weight rows `cols` (Q8_0, 34-byte blocks) into the slab at word `at` of `t`: per block
 * their f16 scales as f32 (lane c: col c), then dword i of their quants, 4 bytes of each of the 16 rows in turn.
 */
export function slabRepack(b: Builder, cols: readonly FastCol[], t: Arr<"u32">, at: Val<"u32">, K: Val<"u32">): void {
  const { let_, for_, u32 } = b;
  const nb = let_(K.div(32), "nb");
  for_(
    u32(0),
    nb,
    1,
    (blk) => {
      const o = let_(at.add(blk.mul(SLAB_BLOCK / 4)), "so");
      cols.forEach(({ W, n }, c) => {
        const base = let_(n.mul(nb).add(blk).mul(34), "base");
        t.set(o.add(c), f16At(b, W, base).bitcast("u32"));
        const q = let_(W.at32x8(base.add(2)), "wq");
        for (let i = 0; i < 8; i++) t.set(o.add(16 + i * 16 + c), q.lane(i));
      });
    },
    "blk",
  );
}

/**
 * The rows `p.rows` of x (quantized q8_0, stored q + 128) against the slab at byte `at` of `tb` (its 16 weight rows
 * are `p.cols`): per block, the 8 interleaved weight vectors are loaded once for all the x rows, `−128 · Σw` per
 * weight row (one `vpdpbusd` of 0x80 bytes per vector) starts each x row's integer sum, each x dword is broadcast
 * into one `vpdpbusd` of all 16 rows, and `dw · dx` times the sum is added to the x row's vec16 of f32 sums (lane c:
 * weight row c), blocks in order as ggml sums them.
 */
export function fastQ8_0SlabLoop(b: Builder, p: FastParts, tb: Arr<"u8">, at: Val<"u32">): void {
  const { let_, var_, for_, u32 } = b;
  const nb = let_(p.K.div(32), "nb");
  const flip = spread(b, "vec16<u32>", 16, u32(0x80808080));
  const sums = p.rows.map(() => var_(zeroF(b, 16), "fs"));
  for_(
    u32(0),
    nb,
    1,
    (blk) => {
      const o = let_(at.add(blk.mul(SLAB_BLOCK)), "so");
      const ws = Array.from({ length: 8 }, (_, i) => let_(tb.at64x8(o.add(64 + i * 64)), `sw${i}`));
      const corr = let_(ws.reduce((s, w) => b.dot4U8I8(s, flip, w), zeroI(b, 16)).neg(), "corr");
      const dw = let_(tb.at64x8(o).bitcast("vec16<f32>"), "dw");
      p.rows.forEach((m, j) => {
        const bi = let_(m.mul(nb).add(blk), "bi");
        const xo = let_(bi.mul(32), "xo");
        let s: Val<"vec16<i32>"> = corr;
        ws.forEach((w, i) => {
          const xd = spread(b, "vec16<u32>", 16, p.q.at16x8(xo.add(4 * i)).lane(0));
          s = b.dot4U8I8(s, xd, w);
        });
        const dx = spread(b, "vec16<f32>", 16, p.d.at(bi));
        sums[j]!.set(b.fma(let_(s, "isum").cast("vec16<f32>"), dw.mul(dx), sums[j]!));
      });
    },
    "blk",
  );
  p.accs.forEach((r, j) => {
    const v = let_(sums[j]!, "fv");
    r.forEach((acc, c) => acc.set(v.lane(c)));
  });
}

/** The slab GEMM of each format that has one (decisions 2390, 2430). */
export const SLABS: Readonly<Record<string, SlabKernels>> = {
  q8_0: { elems: 32, bytes: SLAB_BLOCK, repack: slabRepack, loop: fastQ8_0SlabLoop },
  q4_k: { elems: 256, bytes: KSLAB_BLOCK.q4_k, repack: q4kSlabRepack, loop: fastQ4_KSlabLoop },
  q6_k: { elems: 256, bytes: KSLAB_BLOCK.q6_k, repack: q6kSlabRepack, loop: fastQ6_KSlabLoop },
};

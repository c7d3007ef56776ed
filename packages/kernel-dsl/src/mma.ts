// Warp-scope matrix multiply-accumulate (tensor cores): the m16n8k16 fragment layout every lane holds, as the PTX
// ISA defines it for `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32`, and the exact arithmetic
// the interpreter gives the `mma` statement.

import type { MmaInput } from "./ir.js";
import { bf16BitsToF32, f16BitsToF32 } from "./numeric.js";

/** Rows (M), columns (N) and depth (K) of the one supported shape, m16n8k16. */
export const MMA_M = 16;
/** See {@link MMA_M}. */
export const MMA_N = 8;
/** See {@link MMA_M}. */
export const MMA_K = 16;
/** Lanes of the subgroup that executes an `mma` together (a warp). */
export const MMA_LANES = 32;

/**
 * Where element `i` (0..7) of lane `lane`'s A fragment sits in the 16×16 A tile (row-major, [m][k]). The fragment
 * is a `vec4<u32>`; word `i >> 1` holds elements `i & ~1` (low 16 bits) and `i | 1` (high 16 bits).
 * groupID = lane >> 2, tig = lane & 3: row = groupID (+8 for i in {2,3,6,7}), col = 2·tig + (i & 1) (+8 for i ≥ 4).
 */
export function mmaACoord(lane: number, i: number): { readonly row: number; readonly col: number } {
  const g = lane >> 2,
    t = lane & 3;
  return { row: g + ((i >> 1) & 1) * 8, col: 2 * t + (i & 1) + (i >= 4 ? 8 : 0) };
}

/**
 * Where element `i` (0..3) of lane `lane`'s B fragment sits in the 16×8 B tile ([k][n]). The fragment is a
 * `vec2<u32>`; word `i >> 1` holds elements `i & ~1` (low half) and `i | 1` (high half).
 * row (k) = 2·tig + (i & 1) (+8 for i ≥ 2), col (n) = groupID.
 */
export function mmaBCoord(lane: number, i: number): { readonly row: number; readonly col: number } {
  const g = lane >> 2,
    t = lane & 3;
  return { row: 2 * t + (i & 1) + (i >= 2 ? 8 : 0), col: g };
}

/**
 * Where element `i` (0..3) of lane `lane`'s C/D fragment (a `vec4<f32>`) sits in the 16×8 accumulator tile ([m][n]).
 * row = groupID (+8 for i ≥ 2), col = 2·tig + (i & 1).
 */
export function mmaCCoord(lane: number, i: number): { readonly row: number; readonly col: number } {
  const g = lane >> 2,
    t = lane & 3;
  return { row: g + (i >= 2 ? 8 : 0), col: 2 * t + (i & 1) };
}

/**
 * The interpreter's arithmetic for one subgroup's `mma`: `a[lane]` (4 packed words), `b[lane]` (2 words) and
 * `c[lane]` (4 f32) for the 32 lanes in order; returns every lane's D fragment.
 *
 * D[m][n] = C[m][n] + Σ_k A[m][k]·B[k][n], accumulated in f32 in ascending k: acc = C; for k = 0..15:
 * acc = f32(acc + A[m][k]·B[k][n]). Each product of two bf16 or two f16 values is exact in f32, so the only
 * rounding is in the sums. Hardware sums in an unspecified order (and may keep extra bits), so tests of kernels
 * that use `mma` compare with a tolerance, never bit for bit.
 */
export function mmaM16n8k16(
  input: MmaInput,
  a: readonly (readonly number[])[],
  b: readonly (readonly number[])[],
  c: readonly (readonly number[])[],
): number[][] {
  const half = input === "bf16" ? bf16BitsToF32 : f16BitsToF32;
  const elem = (words: readonly number[], i: number): number =>
    half(((words[i >> 1] as number) >>> ((i & 1) * 16)) & 0xffff);
  const A = new Float64Array(MMA_M * MMA_K);
  const B = new Float64Array(MMA_K * MMA_N);
  const C = new Float64Array(MMA_M * MMA_N);
  for (let lane = 0; lane < MMA_LANES; lane++) {
    for (let i = 0; i < 8; i++) {
      const { row, col } = mmaACoord(lane, i);
      A[row * MMA_K + col] = elem(a[lane] as readonly number[], i);
    }
    for (let i = 0; i < 4; i++) {
      const bc = mmaBCoord(lane, i);
      B[bc.row * MMA_N + bc.col] = elem(b[lane] as readonly number[], i);
      const cc = mmaCCoord(lane, i);
      C[cc.row * MMA_N + cc.col] = (c[lane] as readonly number[])[i] as number;
    }
  }
  const D = new Float64Array(MMA_M * MMA_N);
  for (let m = 0; m < MMA_M; m++) {
    for (let n = 0; n < MMA_N; n++) {
      let acc = C[m * MMA_N + n] as number;
      for (let k = 0; k < MMA_K; k++)
        acc = Math.fround(acc + (A[m * MMA_K + k] as number) * (B[k * MMA_N + n] as number));
      D[m * MMA_N + n] = acc;
    }
  }
  return Array.from({ length: MMA_LANES }, (_, lane) =>
    Array.from({ length: 4 }, (_, i) => {
      const { row, col } = mmaCCoord(lane, i);
      return D[row * MMA_N + col] as number;
    }),
  );
}

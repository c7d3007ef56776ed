// Warp-scope matrix multiply-accumulate (tensor cores / matrix cores): the fragment layout every lane holds for each
// `mma` shape (PTX `mma.sync` m16n8k16, AMD MFMA 16x16x16 and the WMMA-backed 16x8x16), and the exact arithmetic
// the interpreter gives the `mma` statement.

import type { MmaInput, MmaShape } from "./ir.js";
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
 * The fragment layout of one `mma` shape: how many lanes execute it together, the tile sizes, how many 16-bit
 * elements (A, B) and f32 accumulators (C/D) each lane holds, and where element `i` of a lane's fragment sits in
 * the tile (A row-major [m][k], B [k][n], C/D [m][n]). A and B elements are packed in 32-bit words, element `i` in
 * word `i >> 1` (low half first, the `pack bf16x2/f16x2` form).
 */
export interface MmaLayout {
  readonly shape: MmaShape;
  /** Lanes of the subgroup that execute it together. */
  readonly lanes: number;
  readonly m: number;
  readonly n: number;
  readonly k: number;
  /** 16-bit A elements per lane (the `a` operand has half as many u32 words). */
  readonly aElems: number;
  /** 16-bit B elements per lane. */
  readonly bElems: number;
  /** f32 accumulator elements per lane (always 4: `vec4<f32>`). */
  readonly cElems: number;
  readonly a: (lane: number, i: number) => { readonly row: number; readonly col: number };
  readonly b: (lane: number, i: number) => { readonly row: number; readonly col: number };
  readonly c: (lane: number, i: number) => { readonly row: number; readonly col: number };
}

/**
 * The three shapes' layouts.
 * - `m16n8k16`: PTX `mma.sync.aligned.m16n8k16.row.col` (32 lanes; {@link mmaACoord} and friends).
 * - `m16n16k16_mfma`: AMD CDNA `v_mfma_f32_16x16x16{f16,bf16_1k}` (64 lanes, gfx90a/gfx942), the registers exactly:
 *   lane l, r = l & 15, h = l >> 4: A[r][4h + i] (i < 4), B[4h + i][r], D[4h + i][r].
 * - `m16n8k16_wmma`: a 16×8×16 product on AMD RDNA3 `v_wmma_f32_16x16x16_{f16,bf16}` (32 lanes, gfx1100). Each lane
 *   holds an eighth of A and B and four accumulators; codegen gathers the operand registers WMMA wants (a whole A
 *   row and B column per lane) with cross-lane reads and runs WMMA with B's 8 columns duplicated into its 16, so
 *   that every accumulator a lane keeps stays in that lane (decision 2401). lane l, r = l & 15, h = l >> 4,
 *   n = l & 7, s = l >> 3, q = s & 1: A[r][8h + i] (i < 8), B[4s + i][n] (i < 4), D[8q + 2i + h][n].
 */
export const MMA_LAYOUTS: { readonly [S in MmaShape]: MmaLayout } = {
  m16n8k16: {
    shape: "m16n8k16",
    lanes: 32,
    m: 16,
    n: 8,
    k: 16,
    aElems: 8,
    bElems: 4,
    cElems: 4,
    a: mmaACoord,
    b: mmaBCoord,
    c: mmaCCoord,
  },
  m16n16k16_mfma: {
    shape: "m16n16k16_mfma",
    lanes: 64,
    m: 16,
    n: 16,
    k: 16,
    aElems: 4,
    bElems: 4,
    cElems: 4,
    a: (lane, i) => ({ row: lane & 15, col: 4 * (lane >> 4) + i }),
    b: (lane, i) => ({ row: 4 * (lane >> 4) + i, col: lane & 15 }),
    c: (lane, i) => ({ row: 4 * (lane >> 4) + i, col: lane & 15 }),
  },
  m16n8k16_wmma: {
    shape: "m16n8k16_wmma",
    lanes: 32,
    m: 16,
    n: 8,
    k: 16,
    aElems: 8,
    bElems: 4,
    cElems: 4,
    a: (lane, i) => ({ row: lane & 15, col: 8 * (lane >> 4) + i }),
    b: (lane, i) => ({ row: 4 * (lane >> 3) + i, col: lane & 7 }),
    c: (lane, i) => ({ row: 8 * ((lane >> 3) & 1) + 2 * i + (lane >> 4), col: lane & 7 }),
  },
};

/** The IR types of an `mma` shape's operands: A and B as `vec2<u32>`/`vec4<u32>` words, C/D as `vec4<f32>`. */
export function mmaOperandTypes(shape: MmaShape): {
  readonly a: "vec2<u32>" | "vec4<u32>";
  readonly b: "vec2<u32>" | "vec4<u32>";
  readonly c: "vec4<f32>";
} {
  const l = MMA_LAYOUTS[shape];
  const words = (elems: number): "vec2<u32>" | "vec4<u32>" => (elems === 4 ? "vec2<u32>" : "vec4<u32>");
  return { a: words(l.aElems), b: words(l.bElems), c: "vec4<f32>" };
}

/**
 * The interpreter's arithmetic for one subgroup's `mma` of `shape`: `a[lane]`, `b[lane]` (packed words) and
 * `c[lane]` (4 f32) for the layout's lanes in order; returns every lane's D fragment.
 *
 * D[m][n] = C[m][n] + Σ_k A[m][k]·B[k][n], accumulated in f32 in ascending k: acc = C; for k = 0..15:
 * acc = f32(acc + A[m][k]·B[k][n]). Each product of two bf16 or two f16 values is exact in f32, so the only
 * rounding is in the sums. Hardware sums in an unspecified order (and may keep extra bits), so tests of kernels
 * that use `mma` compare with a tolerance, never bit for bit.
 */
export function mmaRun(
  shape: MmaShape,
  input: MmaInput,
  a: readonly (readonly number[])[],
  b: readonly (readonly number[])[],
  c: readonly (readonly number[])[],
): number[][] {
  const L = MMA_LAYOUTS[shape];
  const half = input === "bf16" ? bf16BitsToF32 : f16BitsToF32;
  const elem = (words: readonly number[], i: number): number =>
    half(((words[i >> 1] as number) >>> ((i & 1) * 16)) & 0xffff);
  const A = new Float64Array(L.m * L.k);
  const B = new Float64Array(L.k * L.n);
  const C = new Float64Array(L.m * L.n);
  for (let lane = 0; lane < L.lanes; lane++) {
    for (let i = 0; i < L.aElems; i++) {
      const { row, col } = L.a(lane, i);
      A[row * L.k + col] = elem(a[lane] as readonly number[], i);
    }
    for (let i = 0; i < L.bElems; i++) {
      const { row, col } = L.b(lane, i);
      B[row * L.n + col] = elem(b[lane] as readonly number[], i);
    }
    for (let i = 0; i < L.cElems; i++) {
      const { row, col } = L.c(lane, i);
      C[row * L.n + col] = (c[lane] as readonly number[])[i] as number;
    }
  }
  const D = new Float64Array(L.m * L.n);
  for (let m = 0; m < L.m; m++) {
    for (let n = 0; n < L.n; n++) {
      let acc = C[m * L.n + n] as number;
      for (let k = 0; k < L.k; k++) acc = Math.fround(acc + (A[m * L.k + k] as number) * (B[k * L.n + n] as number));
      D[m * L.n + n] = acc;
    }
  }
  return Array.from({ length: L.lanes }, (_, lane) =>
    Array.from({ length: L.cElems }, (_, i) => {
      const { row, col } = L.c(lane, i);
      return D[row * L.n + col] as number;
    }),
  );
}

/** {@link mmaRun} for the PTX shape (kept for callers of the first API). */
export function mmaM16n8k16(
  input: MmaInput,
  a: readonly (readonly number[])[],
  b: readonly (readonly number[])[],
  c: readonly (readonly number[])[],
): number[][] {
  return mmaRun("m16n8k16", input, a, b, c);
}

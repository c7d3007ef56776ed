// The dense (f32, f16, bf16 weights) inner loop of the native CPU GEMVs (decisions 2300, 2310, 2370): the dot products
// of one or several rows of W with one or several rows of x, vecN sums, then a scalar tail.

import type { Arr, Builder, Val, Var } from "@poot/kernel-dsl";
import { sumWide, zeroVec } from "./dequant-cpu.js";

/** Lanes of a native GEMV's vectors: 4 (any SIMD target), 8 (AVX2) or 16 (AVX-512); decision 2310. */
export type NativeLanes = 4 | 8 | 16;

/**
 * Vector sums a dense pass may keep live (AVX-512 and NEON have 32 vector registers, AVX2 16): with one x row, the rows
 * of W that share a pass over x are as many as fit at four sums each (decision 2370).
 */
const SUM_REGISTERS: Readonly<Record<NativeLanes, number>> = { 4: 16, 8: 8, 16: 16 };

/** Rows of W per pass with one x row and `heads` weight matrices at `lanes`: 4 sums each, within the register budget. */
export function denseWRows(lanes: NativeLanes, heads: number): number {
  return Math.max(1, Math.floor(SUM_REGISTERS[lanes] / (4 * heads)));
}

/**
 * Rows of W per pass over the long rows ({@link DENSE_LONG_ROW_BYTES}) with one x row: {@link denseWRows}, but eight
 * (per head) with AVX-512's 16 lanes, each with two vector sums instead of four (decision 2484): eight concurrent
 * weight streams read memory faster than four on one Zen 4 core.
 */
export function denseLongWRows(lanes: NativeLanes, heads: number): number {
  return lanes === 16 ? Math.max(1, Math.floor(LONG_ROW_STREAMS / heads)) : denseWRows(lanes, heads);
}

/** Weight rows (of every head) a long-row pass streams at once with AVX-512 (decision 2484). */
const LONG_ROW_STREAMS = 8;

/**
 * The shortest rows of W, in bytes, that a pass with one x row shares among several rows of W (decision 2370): f32 at
 * K = 4096, f16 and bf16 at K = 8192. Shorter, x (f32) takes at most half of a 32 KB L1 beside the one row streaming
 * past it, and one sequential stream per thread reads memory fastest; longer, the weights evict x and every row reads
 * it again from L2 (K = 8192 f16 decoded at 7–10 GB/s on one thread, K = 2048 at 17–23).
 */
export const DENSE_LONG_ROW_BYTES = 16384;

/** The K from which a dense GEMV over `dtype` weights takes several W rows per pass ({@link DENSE_LONG_ROW_BYTES}). */
export function denseLongK(dtype: "f32" | "f16" | "bf16"): number {
  return DENSE_LONG_ROW_BYTES / (dtype === "f32" ? 4 : 2);
}

/** What {@link denseLoop} reads and leaves. */
export interface DenseParts {
  /** One weight matrix per head (dense storage, read as f32). */
  readonly Ws: readonly Arr<"f32">[];
  readonly x: Arr<"f32">;
  /** Per x row: the element offset of the row in x. */
  readonly xRow: readonly Val<"u32">[];
  /** Rows of W (indices n) dotted with every x row. */
  readonly ns: readonly Val<"u32">[];
  /** Per x row j, W row i and head h: `accs[j][i · heads + h]`, the sum left for the epilogue. */
  readonly accs: readonly (readonly Var<"f32">[])[];
  readonly K: Val<"u32">;
  readonly lanes: NativeLanes;
}

/**
 * The dot products of the W rows `ns` with the x rows `xRow`: four vecN steps per iteration (each W row in turn at
 * every step, so each vector of x is loaded once for all of them), then vecN steps, then the K % N tail. Each (x row,
 * W row, head) keeps four vector sums (one with more than four x rows, which already give independent sums; two when
 * more than four W rows and heads share the pass, decision 2484, so at most 16 stay live), added pairwise at the end,
 * then their lanes as a tree: with four sums, every sum is added in the order of a pass over its row alone.
 */
export function denseLoop(b: Builder, p: DenseParts): void {
  const { let_, var_, for_, u32, f32 } = b;
  const { Ws, x, xRow, ns, accs, K, lanes: L } = p;
  const vt = `vec${L}<f32>` as const;
  const S = xRow.length > 4 ? 1 : Math.min(4, Math.max(1, Math.floor(16 / (ns.length * Ws.length))));
  const rows = ns.map((n, i) => let_(n.mul(K), `row${i}`));
  const K16 = let_(K.sub(K.rem(4 * L)), "k16");
  const K4 = let_(K.sub(K.rem(L)), "k4end");
  const parts = accs.map((byCol, j) =>
    byCol.map((_, c) => Array.from({ length: S }, (_, q) => var_(zeroVec(b, L), `vacc${j}_${c}_${q}`))),
  );
  /** Step q (of L elements) at kk: every W row and head against every x row, into sum `slot`. */
  const step = (kk: Val<"u32">, q: number, slot: number): void => {
    const ws = rows.flatMap((row) => Ws.map((W) => W.atVec(row.add(kk).add(L * q), vt)));
    xRow.forEach((xr, j) => {
      const xv = let_(x.atVec(xr.add(kk).add(L * q), vt), "xv");
      ws.forEach((w, c) => {
        const s = parts[j]![c]![slot]!;
        s.set(b.fma(xv, w, s));
      });
    });
  };
  for_(u32(0), K16, 4 * L, (kk) => [0, 1, 2, 3].forEach((q) => step(kk, q, q % S)), "k");
  for_(K16, K4, L, (kk) => step(kk, 0, 0), "kq");
  const tails = accs.map((byCol) => byCol.map(() => var_(f32(0), "tail")));
  for_(
    K4,
    K,
    1,
    (kk) => {
      const ws = rows.flatMap((row) => Ws.map((W) => W.at(row.add(kk)) as Val<"f32">));
      xRow.forEach((xr, j) => {
        const xv = let_(x.at(xr.add(kk)), "xv");
        ws.forEach((w, c) => {
          const t = tails[j]![c]!;
          t.set(t.add(xv.mul(w)));
        });
      });
    },
    "k1",
  );
  accs.forEach((byCol, j) => byCol.forEach((acc, c) => acc.set(sumWide(b, parts[j]![c]!).add(tails[j]![c]!))));
}

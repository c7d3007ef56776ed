// The shape-generic CPU GEMVs compiled ahead of time into the native kernel library (decision 2300): one kernel per
// weight format and epilogue, M, N, K and the rows of a workgroup as uniforms, so one object serves every model.

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Builder, Kernel, Val, Var } from "@poot/kernel-dsl";
import type { PackedFormat } from "@poot/graph-ir";
import { blockDecoder } from "./decode.js";
import { serialDequantLoop } from "./dequant-cpu.js";
import { denseLongK, denseLongWRows, denseLoop, denseWRows, type NativeLanes } from "./gemv-dense.js";
import {
  FAST_FORMATS,
  fastQ8_0Loop,
  nativeQuantName,
  quantBody,
  quantRow,
  type ActivationQuant,
  type FastParts,
} from "./gemv-int8.js";
import { fastQ4_KLoop, fastQ6_KLoop } from "./gemv-int8-k.js";
import { hasSlab, SLAB_COLS, SLAB_TILE, SLABS } from "./gemv-int8-slab.js";

export type { NativeLanes } from "./gemv-dense.js";

/**
 * Epilogues a native GEMV applies itself: none, `y = acc + r` (the residual add), two weights into y[2][M][N], or
 * two weights (gate, up) into `y = silu(gate) · up` of [M][N] (SwiGLU, decision 2360).
 */
export const NATIVE_EPILOGUES = ["none", "add", "heads2", "swiglu"] as const;
/** One of {@link NATIVE_EPILOGUES}. */
export type NativeEpilogue = (typeof NATIVE_EPILOGUES)[number];
/** Dense weight storage a native GEMV reads. */
export type NativeDense = "f32" | "f16" | "bf16";
/** A native GEMV's weight format: a dense storage type or a packed format's descriptor. */
export type NativeWeights = NativeDense | PackedFormat;

/**
 * The uniforms of every native GEMV, in argument-block order: rows of x (M), rows of W (N), the reduced length (K),
 * and rows of W per workgroup (R; workgroup g computes rows [g R, min(N, g R + R))).
 */
export const NATIVE_GEMV_UNIFORMS = ["M", "N", "K", "R"] as const;

/**
 * Rows of x that share one pass over a row of W (its weights decoded once for all of them): 4, or 8 with 8- and
 * 16-lane vectors (32 registers on AVX-512; each row then keeps one vector sum per weight, decision 2310).
 */
const xRowsOf = (lanes: NativeLanes): number => (lanes > 4 ? 8 : 4);
/**
 * The K from which an `exact` packed GEMV's single x rows (decode) take several W rows per pass (decision 2460): x is
 * then 32 KB of f32, all of a Zen 4 L1D, and would be read again from L2 for every streamed row.
 */
export const PACKED_LONG_K = 8192;

/**
 * The register tile of each format's `fast` GEMMs (decision 2340): x rows × weight rows (all heads counted) per pass.
 * Q8_0 takes 4 × 4: sixteen vec16 sums in x86-64-v4's 32 vector registers beside the four weight rows' blocks,
 * corrections and scales, each x block loaded once for four weight rows (measured 20–30% faster than 8 × 1 at M = 64).
 * The k-quants keep 8 × 1: their work per block and tile entry (four chained `vpdpbusd`, one scale multiply and the
 * epilogue, decision 2403) does not shrink with more weight rows, while eight x rows amortize each weight row's
 * nibble (or 6-bit) permutation and scale decoding over the most products (4 × 2 and 8 × 2 measured 0.77x and 0.72x
 * on Q4_K, decision 2350; 16 × 1 0.69x, its x rows no longer in L1, decision 2403).
 * `decodeCols`, where given, is the weight rows per pass while M < rows (decode, M = 1, decisions 2380, 2470): Q8_0
 * walks one weight row at a time there (one sequential stream, as `exact` does: 1 × 8 over adjacent rows read eight
 * short streams and streamed from memory at half its cached speed); `decodeRuns`, where given, takes `cols` weight
 * rows per pass from K = `minK` on, row i of `cols` runs of consecutive rows (each run one long stream, decision
 * 2470): Q8_0's down projection (K = 8192), where eight sums sharing each x block beat one row at a time.
 */
export const FAST_TILE: Readonly<
  Record<
    string,
    {
      readonly rows: number;
      readonly cols: number;
      readonly decodeCols?: number;
      readonly decodeRuns?: { readonly minK: number; readonly cols: number };
    }
  >
> = {
  q8_0: { rows: 4, cols: 4, decodeCols: 1, decodeRuns: { minK: 4096, cols: 8 } },
  q4_k: { rows: 8, cols: 1 },
  q6_k: { rows: 8, cols: 1 },
};

/**
 * How a "fastx" GEMV reads its group id (decision 2440): the workgroup in the low 24 bits, the calling thread t in bits
 * 24-30 (its slot of the quantized x: rows [t M, t M + M) of q, d and s), and in bit 31 whether that thread already
 * quantized x for an earlier workgroup of the same phase (1: skip the quantization). A plain workgroup id (t = 0, bit
 * 31 clear) quantizes into slot 0 every call: right for one caller at a time.
 */
export const FASTX_GROUP = {
  mask: 0xffffff,
  threadShift: 24,
  threadMask: 0x7f,
  filledShift: 31,
} as const;

/**
 * How a native GEMV takes its activations: `exact` (f32 x, f32 products), `fast` (x quantized beforehand by the
 * activation quantizer's launch, integer dots: decision 2320), or `fastx` (f32 x, which each thread quantizes
 * itself into its own slot of scratch before the same integer dots: no quantizer launch, decisions 2410 and 2440).
 */
export type NativeNumerics = "exact" | "fast" | "fastx";

/**
 * The symbol of the native GEMV of `weights` (a dtype or packed format name) with `epilogue`; with `fast` (true or
 * "fast"), the one that reads quantized activations and dots them in integers (decision 2320); with "fastx", the one
 * that quantizes them itself (decision 2410).
 */
export function nativeGemvName(
  weights: string,
  epilogue: NativeEpilogue,
  fast: boolean | NativeNumerics = false,
): string {
  const kind = fast === true ? "fast" : fast === false ? "exact" : fast;
  return `poot_gemv_${weights}_${kind === "exact" ? "" : `${kind}_`}${epilogue}`;
}

/** The integer inner loop of each packed format of {@link FAST_FORMATS} (decisions 2320, 2335). */
const FAST_LOOPS: Readonly<Record<string, (b: Builder, p: FastParts) => void>> = {
  q8_0: fastQ8_0Loop,
  q4_k: fastQ4_KLoop,
  q6_k: fastQ6_KLoop,
};

/** The activation quantizer `q` (decision 2320): workgroup g quantizes row g of x. */
export function nativeQuantKernel(q: ActivationQuant): Kernel {
  return kernel(nativeQuantName(q), { workgroupSize: [1, 1, 1] }, (b) => quantBody(b, q));
}

/**
 * `e^v` in f32 without a libm call (the library links none): Cephes' `expf`, `2ⁿ · p(r)` with n = round(v · log₂e),
 * r = v − n ln 2 in two parts and p its degree-7 polynomial, v clamped to ±88.376 (about 1 ulp).
 */
export function expF32(b: Builder, v: Val<"f32">): Val<"f32"> {
  const { let_, f32 } = b;
  const x = let_(b.min(b.max(v, f32(-88.3762626647949)), f32(88.3762626647949)), "ex");
  const n = let_(b.floor(x.mul(1.44269504088896341).add(0.5)), "en");
  const r = let_(x.sub(n.mul(0.693359375)).sub(n.mul(-2.1219444e-4)), "er");
  const c = [1.98756915e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1];
  let p: Val<"f32"> = f32(c[0]!);
  for (const k of c.slice(1)) p = b.fma(p, r, f32(k));
  const e = let_(b.fma(p, r.mul(r), r).add(1), "ep");
  const scale = let_(n.cast("i32").add(127).shl(23).bitcast("f32"), "e2n");
  return let_(e.mul(scale), "exp");
}

/** `silu(g) = g / (1 + e^−g)`, as graph-ir's `silu` writes it. */
function silu(b: Builder, g: Val<"f32">): Val<"f32"> {
  return b.let_(g.div(expF32(b, g.neg()).add(1)), "silu");
}

/**
 * Synthesizes the native GEMV of `weights` with `epilogue`, its vectors `lanes` wide (4 by default; 8 and 16 lower
 * only where the caps report that many `vectorLanes`). Buffers: x, W (and W1 for heads2 and swiglu), r (add), y; with `fast`
 * (packed formats of {@link FAST_FORMATS}, decision 2320) the activations come quantized: q, d, s instead of x, and
 * the integer loop is 16 lanes wide (decision 2330) whatever `lanes` says. With "fastx" (decision 2410) the buffers
 * are x, q, d, s, qw (q's bytes again, as u32: the quantizer's stores), …: the calling thread t's first workgroup of a
 * phase quantizes the M rows of x into rows [t M, t M + M) of q, d and s (its own slot of scratch, {@link FASTX_GROUP}),
 * then every workgroup runs the `fast` loop over them.
 */
export function nativeGemvKernel(
  weights: NativeWeights,
  epilogue: NativeEpilogue,
  lanes: NativeLanes = 4,
  numerics: boolean | NativeNumerics = false,
): Kernel {
  const packed = typeof weights !== "string";
  const name = nativeGemvName(packed ? weights.name : weights, epilogue, numerics);
  const fast = numerics === true || numerics === "fast" || numerics === "fastx";
  const quantizes = numerics === "fastx";
  const fastLoop = fast && packed ? FAST_LOOPS[weights.name] : undefined;
  if (fast && fastLoop === undefined) throw new Error(`invariant: no fast GEMV for ${packed ? weights.name : weights}`);
  return kernel(name, { workgroupSize: [1, 1, 1] }, (b) => {
    const { let_, var_, for_, u32, f32, wid } = b;
    const x = (fastLoop === undefined || quantizes ? b.buffer("x", "f32", "read") : undefined) as Arr<"f32">;
    const xs = quantizes ? "read_write" : "read";
    const xq =
      fastLoop === undefined
        ? undefined
        : {
            q: b.buffer("q", "i8", xs) as Arr<"i8">,
            d: b.buffer("d", "f32", xs) as Arr<"f32">,
            s: b.buffer("s", "i32", xs) as Arr<"i32">,
          };
    const qw = quantizes ? (b.buffer("qw", "u32", "write") as Arr<"u32">) : undefined;
    const heads = epilogue === "heads2" || epilogue === "swiglu" ? 2 : 1;
    const elem = packed ? "u8" : weights;
    // Packed bytes are read as u8 (the decoders take them as an Arr<"u32"> of byte loads, as dequant.ts does).
    const Ws = Array.from({ length: heads }, (_, h) => b.buffer(h === 0 ? "W" : `W${h}`, elem, "read")) as Arr[];
    const r = epilogue === "add" ? (b.buffer("r", "f32", "read") as Arr<"f32">) : undefined;
    const y = b.buffer("y", "f32", "write") as Arr<"f32">;
    // `fast` Q8_0, Q4_K, Q6_K: the workgroup's slab of interleaved weight rows (decisions 2390, 2430), written as
    // words, read as bytes; not "fastx", which decode's single x row takes (decision 2410).
    const slab = !quantizes && fastLoop !== undefined && hasSlab((weights as PackedFormat).name);
    const slabK = slab ? SLABS[(weights as PackedFormat).name]! : undefined;
    const t = slab ? (b.buffer("t", "u32", "write") as Arr<"u32">) : undefined;
    const tb = slab ? (b.buffer("tb", "u8", "read") as Arr<"u8">) : undefined;
    const [M, N, K, R] = NATIVE_GEMV_UNIFORMS.map((u) => b.uniform(u, "u32")) as [Val<"u32">, ...Val<"u32">[]];
    // fastx: the group id carries the calling thread (bits 24-30) and whether that thread already quantized x in this
    // phase (bit 31); the workgroup is the low 24 bits (FASTX_GROUP).
    const group = quantizes ? let_(wid.x.and(FASTX_GROUP.mask), "grp") : wid.x;
    const n0 = let_(group.mul(R!), "n0");
    const n1 = let_(b.min(n0.add(R!), N!), "n1");
    const MN = let_(M.mul(N!), "mn");
    // fastx: the calling thread's rows of q, d and s (its slot), filled from x before any weight is read unless the
    // thread filled them for an earlier workgroup of the same phase.
    const slot = quantizes
      ? let_(wid.x.shr(FASTX_GROUP.threadShift).and(FASTX_GROUP.threadMask).mul(M), "slot")
      : undefined;
    if (slot !== undefined && xq !== undefined) {
      const q = FAST_FORMATS[(weights as PackedFormat).name]!;
      // The quantizer writes q through a u32 view of the same bytes (bound to the same address: buffer qw).
      const out = { ...xq, q: qw! };
      b.if_(wid.x.shr(FASTX_GROUP.filledShift).eq(0), () =>
        for_(u32(0), M, 1, (m) => quantRow(b, q, x, out, K!, m, slot.add(m)), "qm"),
      );
    }
    const tile = fastLoop === undefined ? undefined : FAST_TILE[(weights as PackedFormat).name]!;
    const rowsPerPass = tile === undefined ? xRowsOf(lanes) : tile.rows;
    // Weight rows (of every head) per pass: `fast` tiles take several (decision 2340), the f32 loops one.
    const colsPerPass = tile === undefined ? 1 : Math.max(1, Math.floor(tile.cols / heads));
    const M4 = let_(M.sub(M.rem(rowsPerPass)), "m4");
    /** Rows [m, m + rows) of x against rows [n, n + cols) of W, each result stored with the epilogue. */
    const pass = (
      n: Val<"u32">,
      cols: number,
      m: Val<"u32">,
      rows: number,
      slabAt?: Val<"u32">,
      step?: Val<"u32">,
    ): void => {
      const xRow = Array.from({ length: rows }, (_, j) => let_(m.add(j).mul(K!), `xr${j}`));
      const ns = Array.from({ length: cols }, (_, i) =>
        i === 0 ? n : let_(step === undefined ? n.add(i) : n.add(step.mul(i)), `n${i}`),
      );
      // accs[j][i · heads + h]: x row m + j against row n + i of head h.
      const accs = xRow.map((_, j) => ns.flatMap(() => Ws.map((_, h) => var_(f32(0), `acc${j}_${h}`))));
      if (fastLoop !== undefined && xq !== undefined) {
        const rows = xRow.map((_, j) => let_(slot === undefined ? m.add(j) : slot.add(m).add(j), `mr${j}`));
        const fc = ns.flatMap((ni) => Ws.map((W) => ({ W: W as unknown as Arr<"u8">, n: ni })));
        if (slabAt !== undefined) slabK!.loop(b, { ...xq, cols: fc, rows, accs, K: K! }, tb!, slabAt);
        else fastLoop(b, { ...xq, cols: fc, rows, accs, K: K! });
      } else if (packed) {
        const nb = let_(K!.div(weights.blockSize), "nb");
        const decs = Ws.map((W) => blockDecoder(b, weights, W as unknown as Arr<"u32">));
        const Wu = Ws as unknown as Arr<"u32">[];
        const partials = rows > 4 ? 1 : 4;
        const loop = { f: weights, Ws: Wu, decs, x, xRow, accs, n, ns, nb, simd: true, lanes, partials, fma: true };
        serialDequantLoop(b, loop);
      } else denseLoop(b, { Ws: Ws as unknown as Arr<"f32">[], x, xRow, ns, accs, K: K!, lanes });
      accs.forEach((row, j) => {
        ns.forEach((ni, i) => {
          const yi = let_(m.add(j).mul(N!).add(ni), "yi");
          if (epilogue === "swiglu") return y.set(yi, silu(b, row[i * 2]!).mul(row[i * 2 + 1]!));
          Ws.forEach((_, h) => {
            const acc = row[i * heads + h]!;
            const v = r === undefined ? acc : acc.add(r.at(yi));
            y.set(h === 0 ? yi : yi.add(MN), v);
          });
        });
      });
    };
    /** Rows [n, n + cols) of W (or n, n + step, …) against every row of x. */
    const columns = (n: Val<"u32">, cols: number, step?: Val<"u32">): void => {
      for_(u32(0), M4, rowsPerPass, (m) => pass(n, cols, m, rowsPerPass, undefined, step), "mb");
      for_(M4, M, 1, (m) => pass(n, cols, m, 1, undefined, step), "m");
    };
    /**
     * Rows [n0, n1) of W in `cols` runs of s = (n1 − n0) / cols rows each, a pass taking row i of every run (rows n,
     * n + s, …): each weight row of the tile continues where its run's previous one ended, so every run is one long
     * sequential stream, then the rows past cols · s one at a time.
     */
    const runsOfW = (cols: number): void => {
      const s = let_(n1.sub(n0).div(cols), "rs");
      for_(n0, n0.add(s), 1, (n) => columns(n, cols, s), "nr");
      for_(n0.add(s.mul(cols)), n1, 1, (n) => columns(n, 1), "n");
    };
    /** Rows [n0, n1) of W, `cols` per pass then one at a time. */
    const rowsOfW = (cols: number): void => {
      if (cols === 1) for_(n0, n1, 1, (n) => columns(n, 1), "n");
      else {
        const nc = let_(n1.sub(n1.sub(n0).rem(cols)), "nc");
        for_(n0, nc, cols, (n) => columns(n, cols), "nt");
        for_(nc, n1, 1, (n) => columns(n, 1), "n");
      }
    };
    /** `fast` at M >= the slab's minM: rows [n0, n1) of W 16 at a time through the workgroup's slab (2390, 2430). */
    const slabWalk = (): void => {
      const sc = SLAB_COLS / heads;
      const words = let_(K!.div(slabK!.elems).mul(slabK!.bytes / 4), "sw");
      const at = let_(wid.x.mul(words), "sat");
      const M8 = let_(M.sub(M.rem(SLAB_TILE.rows)), "m8");
      const nc = let_(n1.sub(n1.sub(n0).rem(sc)), "nc");
      for_(
        n0,
        nc,
        sc,
        (n) => {
          const ns = Array.from({ length: sc }, (_, i) => (i === 0 ? n : let_(n.add(i), `n${i}`)));
          const fc = ns.flatMap((ni) => Ws.map((W) => ({ W: W as unknown as Arr<"u8">, n: ni })));
          slabK!.repack(b, fc, t!, at, K!);
          const atB = let_(at.mul(4), "sab");
          for_(u32(0), M8, SLAB_TILE.rows, (m) => pass(n, sc, m, SLAB_TILE.rows, atB), "mb");
          for_(M8, M, 1, (m) => pass(n, sc, m, 1, atB), "m");
        },
        "ns",
      );
      for_(nc, n1, 1, (n) => columns(n, 1), "n");
    };
    // Dense W with long rows: the single x rows (decode) take several rows of W per pass (decision 2370); the blocks
    // of x rows (prefill) keep one W row per pass, their sums already fill the registers.
    const wRows = packed ? 1 : denseLongWRows(lanes, heads);
    if (!packed && wRows > 1) {
      const long = (): void => {
        const nc = let_(n1.sub(n1.sub(n0).rem(wRows)), "nc");
        const block = (n: Val<"u32">): void => {
          const one = (m: Val<"u32">): void =>
            for_(u32(0), u32(wRows), 1, (i) => pass(n.add(i), 1, m, rowsPerPass), "i");
          for_(u32(0), M4, rowsPerPass, one, "mb");
          for_(M4, M, 1, (m) => pass(n, wRows, m, 1), "m");
        };
        for_(n0, nc, wRows, block, "nt");
        for_(nc, n1, 1, (n) => columns(n, 1), "n");
      };
      b.if_(K!.ge(denseLongK(weights as NativeDense)), long, () => rowsOfW(colsPerPass));
      return;
    }
    // Packed W: the format's tile, and its decode tile while M is below the tile's x rows (decisions 2380, 2470).
    const decodeCols = tile?.decodeCols === undefined ? colsPerPass : Math.max(1, Math.floor(tile.decodeCols / heads));
    // `exact` packed W with long rows while M is below the x-row block (decode): several W rows per pass over x
    // (decision 2460); shorter rows keep one sequential stream (four measured 0.5x at K = 2048, N >= 8192).
    if (tile === undefined) {
      const cols = denseWRows(lanes, heads);
      if (cols === 1) rowsOfW(1);
      else {
        const decode = (): void => {
          const nc = let_(n1.sub(n1.sub(n0).rem(cols)), "nc");
          for_(n0, nc, cols, (n) => for_(u32(0), M, 1, (m) => pass(n, cols, m, 1), "m"), "nt");
          for_(nc, n1, 1, (n) => for_(u32(0), M, 1, (m) => pass(n, 1, m, 1), "m"), "n");
        };
        b.if_(M.lt(rowsPerPass).and(K!.ge(PACKED_LONG_K)), decode, () => rowsOfW(1));
      }
      return;
    }
    const prefill = slab
      ? () => b.if_(M.ge(SLAB_TILE.minM), slabWalk, () => rowsOfW(colsPerPass))
      : () => rowsOfW(colsPerPass);
    const runs = tile?.decodeRuns;
    const decode = (): void => {
      if (runs === undefined) rowsOfW(decodeCols);
      else
        b.if_(
          K!.ge(runs.minK),
          () => runsOfW(Math.max(1, Math.floor(runs.cols / heads))),
          () => rowsOfW(decodeCols),
        );
    };
    if (decodeCols === colsPerPass && runs === undefined) prefill();
    else b.if_(M.lt(rowsPerPass), decode, prefill);
  });
}

/**
 * Every native GEMV of `formats` (the packed formats to serve beside f32, f16 and bf16), for each epilogue, with
 * vectors `lanes` wide.
 */
export function nativeGemvLibrary(formats: readonly PackedFormat[], lanes: NativeLanes = 4): Kernel[] {
  const weights: NativeWeights[] = ["f32", "f16", "bf16", ...formats];
  return weights.flatMap((w) => NATIVE_EPILOGUES.map((e) => nativeGemvKernel(w, e, lanes)));
}

/**
 * The `fast` GEMVs of those of `formats` with an integer loop, for each epilogue, and the activation quantizers they
 * read (decision 2320), then the same GEMVs quantizing their activations themselves ("fastx", decision 2410): x86 code
 * for AVX-512 VNNI, linked once (not per vector width) into the native library.
 */
export function nativeFastLibrary(formats: readonly PackedFormat[]): Kernel[] {
  const fast = formats.filter((f) => FAST_FORMATS[f.name] !== undefined);
  const quants = [...new Set(fast.map((f) => FAST_FORMATS[f.name]!))];
  return [
    ...fast.flatMap((w) => NATIVE_EPILOGUES.map((e) => nativeGemvKernel(w, e, 4, true))),
    ...quants.map(nativeQuantKernel),
    ...fast.flatMap((w) => NATIVE_EPILOGUES.map((e) => nativeGemvKernel(w, e, 4, "fastx"))),
  ];
}

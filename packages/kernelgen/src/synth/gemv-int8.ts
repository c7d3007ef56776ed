// `fast` numerics for the native CPU GEMVs (decision 2320): each activation row is quantized once to 8-bit blocks
// (llama.cpp's Q8_0 for Q8_0 weights, Q8_K for the k-quants), and each weight block is dotted with it in integers
// (`dot4U8I8`: VNNI `vpdpbusd`), the block scales applied in f32 — the arithmetic of llama.cpp's CPU backend.

import { type Arr, type Builder, type Val, type Var, type VecType, lanesOf } from "@poot/kernel-dsl";

/**
 * The activation quantizations (decision 2320), as llama.cpp's CPU backend rounds them:
 * - `q8_0`: blocks of 32, `d = amax / 127` rounded to f16, `q = round_even(x · 127 / amax)` (its AVX2 quantizer),
 *   stored as the unsigned byte q + 128 (the first operand of `dot4U8I8`);
 * - `q8_k`: blocks of 256, `iscale = −127 / max` (max: the element of largest |x|, signed), `q = min(127,
 *   round_even(iscale · x))`, `d = 1 / iscale` in f32 (`quantize_row_q8_K_ref`), its 256 bytes stored as 4 chunks
 *   of 64 where chunk c's 32-bit lane l holds elements 16l + 4c … 16l + 4c + 3 (element e at byte
 *   64 · ((e >> 2) & 3) + 4 · (e >> 4) + (e & 3), decision 2403): one lane per 16-element group in every chunk, so
 *   the k-quant loops' per-lane scales, mins and sums are the same for the block's four chunks.
 * Each also stores the sum of the q of every {@link ACT_SUM} (16) elements: llama.cpp's `bsums` of `block_q8_K`, which the
 * k-quant loops dot with their per-sub-block mins (Q4_K) or with the −32 offset of their quants (Q6_K).
 */
export type ActivationQuant = "q8_0" | "q8_k";

/** Elements per scale of each activation quantization. */
export const ACT_BLOCK: Readonly<Record<ActivationQuant, number>> = { q8_0: 32, q8_k: 256 };

/** Elements per stored activation sum (`bsums`, as `block_q8_K`'s): Q6_K's 16-element sub-blocks need that grain. */
export const ACT_SUM = 16;

/**
 * The packed weight formats with `fast` GEMVs, and the activation quantization each is dotted with (llama.cpp's
 * `vec_dot_type`): the data the native library, the router and the benches read, so a new format is one entry here
 * and one integer loop in gemv-native.ts's table.
 */
export const FAST_FORMATS: Readonly<Record<string, ActivationQuant>> = { q8_0: "q8_0", q4_k: "q8_k", q6_k: "q8_k" };

/** The uniforms of an activation quantizer: rows (M) and row length (K); workgroup g quantizes row g. */
export const NATIVE_QUANT_UNIFORMS = ["M", "K"] as const;

/** The symbol of the activation quantizer `q`. */
export function nativeQuantName(q: ActivationQuant): string {
  return `poot_quant_${q}`;
}

/**
 * Where an activation quantizer writes: quantized bytes, block scales and sums (decision 2320's q, d, s); the bytes
 * through a u32 view of them, four per store (the IR has no vector store, and byte stores at u32 indices do not merge:
 * decision 2410).
 */
export interface QuantOut {
  readonly q: Arr<"u32">;
  readonly d: Arr<"f32">;
  readonly s: Arr<"i32">;
}

/** The lanes of `v` combined pairwise by `op` (a tree). */
function reduceLanes<T extends "u32" | "i32">(
  b: Builder,
  v: Val<`vec16<${T}>`>,
  op: (a: Val<T>, c: Val<T>) => Val<T>,
): Val<T> {
  const t = b.let_(v, "rl");
  let xs = Array.from({ length: 16 }, (_, i) => t.lane(i) as unknown as Val<T>);
  while (xs.length > 1) xs = Array.from({ length: xs.length / 2 }, (_, i) => op(xs[i]!, xs[i + xs.length / 2]!));
  return xs[0]!;
}

/**
 * Quantizes row `src` of x (f32, rows of K) into row `dst` of `out` (q: K bytes per row, d: one scale per block, s:
 * one sum per {@link ACT_SUM} elements), as llama.cpp rounds (see {@link ActivationQuant}). In 16 lanes (decision
 * 2410): each block as B / 16 vec16<f32>, |x| and its maximum lane-wise then across the lanes (max is exact in any
 * order), the rounding and the 16-element sums in vectors; q8_k's signed max (the first element of largest |x|) by a
 * scalar scan that stops at it. The same values as a scalar loop, element by element.
 */
export function quantRow(
  b: Builder,
  q: ActivationQuant,
  x: Arr<"f32">,
  out: QuantOut,
  K: Val<"u32">,
  src: Val<"u32">,
  dst: Val<"u32">,
): void {
  const { let_, var_, for_, u32, f32 } = b;
  const B = ACT_BLOCK[q];
  const row = let_(src.mul(K), "row");
  const orow = let_(dst.mul(K), "orow");
  const nb = let_(K.div(B), "nb");
  const splat = (v: Val<"f32"> | number): Val<"vec16<f32>"> =>
    spread(b, "vec16<f32>", 16, typeof v === "number" ? f32(v) : v);
  const splatI = (v: number): Val<"vec16<i32>"> => spread(b, "vec16<i32>", 16, b.i32(v));
  for_(
    u32(0),
    nb,
    1,
    (blk) => {
      const k0 = let_(row.add(blk.mul(B)), "k0");
      const o0 = let_(orow.add(blk.mul(B)), "o0");
      const vs = Array.from({ length: B / 16 }, (_, h) => let_(x.atVec(k0.add(16 * h), "vec16<f32>"), "xv"));
      // |x| as bits: for non-negative floats the integer order is the float order (and no NaN handling).
      const lanes = vs.map((v) => v.bitcast("vec16<u32>").and(0x7fffffff)).reduce((m, v) => b.max(m, v));
      const amax = let_(reduceLanes<"u32">(b, lanes, (m, v) => b.max(m, v)).bitcast("f32"), "amax");
      const nz = let_(amax.gt(0), "nz");
      let id: Val<"f32">, d: Val<"f32">;
      if (q === "q8_0") {
        // id = 127 / amax, d = f16(amax / 127).
        id = let_(b.select(nz, f32(127).div(b.select(nz, amax, f32(1))), f32(0)), "id");
        d = b.unpack("f16", b.pack("f16", amax.div(127)));
      } else {
        // iscale = −127 / max, d = 1 / iscale, max the first element of largest |x| (llama.cpp's loop), signed.
        const vmax = var_(f32(0), "vmax");
        for_(
          u32(0),
          u32(B),
          1,
          (j) => {
            const v = let_(x.at(k0.add(j)), "v");
            b.if_(b.abs(v).eq(amax), () => {
              vmax.set(v);
              b.break_();
            });
          },
          "j",
        );
        id = let_(b.select(nz, f32(-127).div(b.select(nz, vmax, f32(1))), f32(0)), "id");
        d = b.select(nz, f32(1).div(id), f32(0));
      }
      out.d.set(blk.add(dst.mul(nb)), d);
      const idv = splat(id);
      const rne = splat(12582912);
      const bias = b.vec("vec16<i32>", ...Array.from({ length: 16 }, () => b.i32(q === "q8_0" ? 128 : 0)));
      const shifts = b.vec("vec16<u32>", ...Array.from({ length: 16 }, (_, l) => u32(8 * (l % 4))));
      vs.forEach((v, h) => {
        // x · id + 1.5 · 2²³ rounds to even and holds q in its low mantissa bits: q = bits − 0x4b400000, capped at 127.
        const t = let_(v.mul(idv).add(rne).bitcast("vec16<i32>"), "qt");
        const r = let_(b.min(t, splatI(0x4b40007f)).sub(splatI(0x4b400000)), "qv");
        // Each byte (q + 128 for q8_0) shifted to its place in its u32, four lanes or-ed into one word.
        const bytes = let_(r.add(bias).cast("vec16<u32>").and(255).shl(shifts), "qb");
        // q8_0 in element order; q8_k in the k-quant loops' order (decision 2403): the word of elements 16h + 4j … + 3
        // at byte 64j + 4h of the block.
        const w0 = let_(o0.div(4), "qw");
        for (let j = 0; j < 4; j++) {
          const [a, c, e, f] = [0, 1, 2, 3].map((i) => bytes.lane(4 * j + i));
          out.q.set(w0.add(q === "q8_0" ? 4 * h + j : 16 * j + h), a!.or(c!).or(e!.or(f!)));
        }
        out.s.set(
          o0.div(ACT_SUM).add(h),
          reduceLanes<"i32">(b, r, (m, v) => m.add(v)),
        );
      });
    },
    "blk",
  );
}

/**
 * Body of the activation quantizer `q`. Buffers: x (f32 [M, K]), q (i8 [M, K]), d (f32 per block), s (i32 per
 * {@link ACT_SUM} elements); workgroup g quantizes row g.
 */
export function quantBody(b: Builder, q: ActivationQuant): void {
  const x = b.buffer("x", "f32", "read") as Arr<"f32">;
  const out: QuantOut = {
    q: b.buffer("q", "u32", "write") as Arr<"u32">,
    d: b.buffer("d", "f32", "write") as Arr<"f32">,
    s: b.buffer("s", "i32", "write") as Arr<"i32">,
  };
  const [, K] = NATIVE_QUANT_UNIFORMS.map((u) => b.uniform(u, "u32")) as [Val<"u32">, Val<"u32">];
  quantRow(b, q, x, out, K, b.wid.x, b.wid.x);
}

/** One weight row (output column) of a fast GEMM tile: its matrix (a head) and its row index n. */
export interface FastCol {
  readonly W: Arr<"u8">;
  readonly n: Val<"u32">;
}

/**
 * What the fast inner loop reads: the quantized activations and the weight rows of one register tile (decision
 * 2340): every x row of `rows` is dotted with every weight row of `cols`, each weight block loaded and decoded once
 * for all the tile's x rows and each x block loaded once for all its weight rows; `accs[j][c]` takes x row j · col c.
 */
export interface FastParts {
  /** Quantized activations (i8 [M, K]), block scales, sums per {@link ACT_SUM}. */
  readonly q: Arr<"i8">;
  readonly d: Arr<"f32">;
  readonly s: Arr<"i32">;
  readonly cols: readonly FastCol[];
  /** Per x row: its index m. */
  readonly rows: readonly Val<"u32">[];
  readonly accs: readonly (readonly Var<"f32">[])[];
  readonly K: Val<"u32">;
}

/** How far before an f16 {@link f16At}'s 16-byte load starts (even, so the f16 is half of one u32 lane). */
export type F16Back = 0 | 2 | 4 | 6 | 8 | 10 | 12 | 14;
/**
 * The little-endian f16 at bytes `i`, `i + 1` of W as f32, by one packed 16-byte load of bytes `i − back` …
 * `i − back + 15` (two byte loads do not merge into one: decision 2380). `back` (even, 0–14) keeps the load inside
 * the block when the f16 is near its end (Q6_K's d ends its 210-byte block: `back` 14); LLVM narrows the load to the
 * 16 bits used (decision 2420).
 */
export function f16At(b: Builder, W: Arr<"u8">, i: Val<"u32">, back: F16Back = 0): Val<"f32"> {
  const word = W.at16x8(back === 0 ? i : i.sub(back)).lane(back >> 2);
  return b.let_(b.unpack("f16", back % 4 === 0 ? word.and(0xffff) : word.shr(16)), "h");
}

/** Lanes of the fast loops' vectors: 8 (256-bit) or 16 (512-bit `vpdpbusd`). */
export type Lanes = 8 | 16;
/** `n` copies of each of `vs` in turn, as one vecN of type `t` (`n · vs.length` lanes). */
export function spread<T extends VecType>(b: Builder, t: T, n: number, ...vs: Val[]): Val<T> {
  return b.vec(t, ...vs.flatMap((v) => Array.from({ length: n }, () => v)));
}
/** A vecL<f32> of zeros. */
export const zeroF = <L extends Lanes>(b: Builder, l: L): Val<`vec${L}<f32>`> =>
  spread(b, `vec${l}<f32>`, l, b.f32(0)) as Val<`vec${L}<f32>`>;
/** A vecL<i32> of zeros. */
export const zeroI = <L extends Lanes>(b: Builder, l: L): Val<`vec${L}<i32>`> =>
  spread(b, `vec${l}<i32>`, l, b.i32(0)) as Val<`vec${L}<i32>`>;
/** The lanes of a vec8 `a` then those of a vec8 `b` as one vec16 (a register concatenation). */
export function concat16(b: Builder, x: Val<"vec8<u32>">, y: Val<"vec8<u32>">): Val<"vec16<u32>"> {
  const lanes = [x, y].flatMap((v) => Array.from({ length: 8 }, (_, i) => v.lane(i)));
  return b.let_(b.vec("vec16<u32>", ...lanes), "cat");
}
/** The sum of the lanes of `v`, pairwise (a tree). */
export function hsum(b: Builder, v: Val<`vec${Lanes}<f32>`>): Val<"f32"> {
  const t = b.let_(v as Val<"vec16<f32>">, "hs");
  let xs: Val<"f32">[] = Array.from({ length: lanesOf(v.type) }, (_, i) => t.lane(i));
  while (xs.length > 1) xs = Array.from({ length: xs.length / 2 }, (_, i) => xs[i]!.add(xs[i + xs.length / 2]!));
  return xs[0]!;
}

/**
 * Q8_0 weights (34-byte blocks: f16 d, 32 i8) against q8_0 activations stored as q + 128, two blocks at a time in
 * 16 lanes (decision 2330: one 512-bit `vpdpbusd`, 64 multiply-adds, per x row, weight row and pair), an odd last
 * block in the low 8 lanes (the high 8 zero). `vpdpbusd` takes unsigned bytes times signed ones, and the side of the
 * tile with fewer rows pays the −128 correction (decision 2380): with more weight rows than x rows (decode's runs, 2470)
 * the weights enter as the unsigned w + 128 (w xor 0x80) and the activations as the signed q (their stored byte xor
 * 0x80), summed from −128 · Σq (a `dot4U8I8` of 0x80 bytes with q, once per x row); otherwise (2340's 4 × 4) the
 * activations enter as stored and the weights as signed, summed from −128 · Σw (a `dot4U8I8` of ones with w, once
 * per weight row). Either is Σ w · q exactly. Then `dw · dx` (per half, a vec16 multiply of the weight row's scales
 * by the x row's) times the integer sums is added to a vec16 f32 sum per tile entry (one fma); decision 2340.
 */
export function fastQ8_0Loop(b: Builder, p: FastParts): void {
  const { let_, var_, for_, u32, f32 } = b;
  const nb = let_(p.K.div(32), "nb");
  const pairs = let_(nb.div(2), "np");
  const wide = p.accs.map((r) => r.map(() => var_(zeroF(b, 16), "fs")));
  const zero8 = spread(b, "vec8<u32>", 8, u32(0));
  const flip = spread(b, "vec16<u32>", 16, u32(0x80808080));
  const ones = spread(b, "vec16<u32>", 16, u32(0x01010101));
  // Which operand carries the correction: the activations' when they are the fewer rows of the tile.
  const xSide = p.rows.length < p.cols.length;
  /** Blocks [blk, blk + 2) (`pair`) or block blk alone of every weight row and x row. */
  const step = (blk: Val<"u32">, pair: boolean): void => {
    const ws = p.cols.map(({ W, n }) => {
      const base = let_(n.mul(nb).add(blk).mul(34), "base");
      const raw = concat16(b, W.at32x8(base.add(2)), pair ? W.at32x8(base.add(36)) : zero8);
      // An odd last block: its zero high half dots to zero against the correction (and its scale is zero).
      const w = let_(xSide ? raw.xor(flip) : raw, "wu");
      const init = xSide ? undefined : let_(b.dot4U8I8(zeroI(b, 16), ones, w).mul(-128), "corr");
      const dw = let_(spread(b, "vec16<f32>", 8, f16At(b, W, base), pair ? f16At(b, W, base.add(34)) : f32(0)), "dw");
      return { w, dw, init };
    });
    p.rows.forEach((m, j) => {
      const bi = let_(m.mul(nb).add(blk), "bi");
      const xo = let_(bi.mul(32), "xo");
      const xu = pair ? p.q.at64x8(xo) : concat16(b, p.q.at32x8(xo), zero8);
      const x = let_(xSide ? xu.xor(flip) : xu, "xq");
      const xInit = xSide ? let_(b.dot4U8I8(zeroI(b, 16), flip, x).neg(), "corr") : undefined;
      const dx = let_(spread(b, "vec16<f32>", 8, p.d.at(bi), pair ? p.d.at(bi.add(1)) : f32(0)), "dx");
      ws.forEach((w, c) => {
        const isum = xSide ? b.dot4U8I8(xInit!, w.w, x) : b.dot4U8I8(w.init!, x, w.w);
        const acc = wide[j]![c]!;
        acc.set(b.fma(isum.cast("vec16<f32>"), w.dw.mul(dx), acc));
      });
    });
  };
  for_(u32(0), pairs, 1, (i) => step(let_(i.mul(2), "blk"), true), "pr");
  for_(pairs.mul(2), nb, 1, (blk) => step(blk, false), "blk");
  p.accs.forEach((r, j) => r.forEach((acc, c) => acc.set(hsum(b, wide[j]![c]!))));
}

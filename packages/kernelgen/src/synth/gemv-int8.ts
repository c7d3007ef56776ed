// `fast` numerics for the native CPU GEMVs (decision 2320): each activation row is quantized once to 8-bit blocks
// (llama.cpp's Q8_0 for Q8_0 weights, Q8_K for the k-quants), and each weight block is dotted with it in integers
// (`dot4U8I8`: VNNI `vpdpbusd`), the block scales applied in f32 — the arithmetic of llama.cpp's CPU backend.

import type { Arr, Builder, Val, Var } from "@poot/kernel-dsl";

/**
 * The activation quantizations (decision 2320), as llama.cpp's CPU backend rounds them:
 * - `q8_0`: blocks of 32, `d = amax / 127` rounded to f16, `q = round_even(x · 127 / amax)` (its AVX2 quantizer),
 *   stored as the unsigned byte q + 128 (the first operand of `dot4U8I8`);
 * - `q8_k`: blocks of 256, `iscale = −127 / max` (max: the element of largest |x|, signed), `q = min(127,
 *   round_even(iscale · x))`, `d = 1 / iscale` in f32 (`quantize_row_q8_K_ref`).
 * Each also stores the sum of the q of every 32 elements (llama.cpp's `bsums`, per 32 here).
 */
export type ActivationQuant = "q8_0" | "q8_k";

/** Elements per scale of each activation quantization. */
export const ACT_BLOCK: Readonly<Record<ActivationQuant, number>> = { q8_0: 32, q8_k: 256 };

/** The packed weight formats with `fast` GEMVs, and the activation quantization each is dotted with. */
export const FAST_FORMATS: Readonly<Record<string, ActivationQuant>> = { q8_0: "q8_0", q4_k: "q8_k" };

/** The uniforms of an activation quantizer: rows (M) and row length (K); workgroup g quantizes row g. */
export const NATIVE_QUANT_UNIFORMS = ["M", "K"] as const;

/** The symbol of the activation quantizer `q`. */
export function nativeQuantName(q: ActivationQuant): string {
  return `poot_quant_${q}`;
}

/** Rounds to the nearest integer, ties to even, for |v| < 2^22 (f32 adds of 1.5 · 2^23: the IR has no fast-math). */
function roundEven(b: Builder, v: Val<"f32">): Val<"f32"> {
  return b.let_(v.add(12582912).sub(12582912), "rne");
}

/** Body of the activation quantizer `q`. Buffers: x (f32 [M, K]), q (i8 [M, K]), d (f32 per block), s (i32 per 32). */
export function quantBody(b: Builder, q: ActivationQuant): void {
  const { let_, var_, for_, u32, f32, i32 } = b;
  const x = b.buffer("x", "f32", "read") as Arr<"f32">;
  const qs = b.buffer("q", "i8", "write") as Arr<"i8">;
  const ds = b.buffer("d", "f32", "write") as Arr<"f32">;
  const ss = b.buffer("s", "i32", "write") as Arr<"i32">;
  const [, K] = NATIVE_QUANT_UNIFORMS.map((u) => b.uniform(u, "u32")) as [Val<"u32">, Val<"u32">];
  const B = ACT_BLOCK[q];
  const row = let_(b.wid.x.mul(K), "row");
  const nb = let_(K.div(B), "nb");
  for_(
    u32(0),
    nb,
    1,
    (blk) => {
      const k0 = let_(row.add(blk.mul(B)), "k0");
      const amax = var_(f32(0), "amax");
      const vmax = var_(f32(0), "vmax");
      for_(
        u32(0),
        u32(B),
        1,
        (j) => {
          const v = let_(x.at(k0.add(j)), "v");
          const a = let_(b.abs(v), "a");
          // Strictly greater: the first element of largest |x| (llama.cpp's loop).
          b.if_(a.gt(amax), () => {
            amax.set(a);
            vmax.set(v);
          });
        },
        "j",
      );
      // q8_0: id = 127 / amax, d = f16(amax / 127); q8_k: iscale = −127 / max, d = 1 / iscale.
      const nz = let_(amax.gt(0), "nz");
      const safe = let_(b.select(nz, q === "q8_0" ? amax : vmax, f32(1)), "safe");
      const id = let_(b.select(nz, f32(q === "q8_0" ? 127 : -127).div(safe), f32(0)), "id");
      const d = q === "q8_0" ? b.unpack("f16", b.pack("f16", amax.div(127))) : b.select(nz, f32(1).div(id), f32(0));
      ds.set(blk.add(b.wid.x.mul(nb)), d);
      for_(
        u32(0),
        u32(B / 32),
        1,
        (g) => {
          const sum = var_(i32(0), "sum");
          for_(
            u32(0),
            u32(32),
            1,
            (j) => {
              const k = let_(k0.add(g.mul(32)).add(j), "k");
              const r = let_(b.min(roundEven(b, x.at(k).mul(id)), f32(127)).cast("i32"), "qi");
              qs.set(k, q === "q8_0" ? r.add(128) : r);
              sum.set(sum.add(r));
            },
            "j",
          );
          ss.set(row.add(blk.mul(B)).div(32).add(g), sum);
        },
        "g",
      );
    },
    "blk",
  );
}

/** What the fast inner loop reads: the quantized activations and one weight row per head. */
export interface FastParts {
  /** Quantized activations (i8 [M, K]), block scales, sums per 32. */
  readonly q: Arr<"i8">;
  readonly d: Arr<"f32">;
  readonly s: Arr<"i32">;
  readonly Ws: readonly Arr<"u8">[];
  /** Per x row: its index m. */
  readonly rows: readonly Val<"u32">[];
  readonly accs: readonly (readonly Var<"f32">[])[];
  readonly n: Val<"u32">;
  readonly K: Val<"u32">;
}

/** A little-endian f16 of bytes `i`, `i + 1` of W, as f32. */
function f16At(b: Builder, W: Arr<"u8">, i: Val<"u32">): Val<"f32"> {
  return b.let_(b.unpack("f16", W.at(i).or(W.at(i.add(1)).shl(8))), "h");
}

const zeroF = (b: Builder): Val<"vec4<f32>"> => b.vec("vec4<f32>", b.f32(0), b.f32(0), b.f32(0), b.f32(0));
const zeroI = (b: Builder): Val<"vec4<i32>"> => b.vec("vec4<i32>", b.i32(0), b.i32(0), b.i32(0), b.i32(0));
const splatF = (b: Builder, v: Val<"f32">): Val<"vec4<f32>"> => b.vec("vec4<f32>", v, v, v, v);
const splatI = (b: Builder, v: Val<"i32">): Val<"vec4<i32>"> => b.vec("vec4<i32>", v, v, v, v);
const hsum = (b: Builder, v: Val<"vec4<f32>">): Val<"f32"> => {
  const t = b.let_(v, "hs");
  return t.x.add(t.y).add(t.z.add(t.w));
};

/**
 * Q8_0 weights (34-byte blocks: f16 d, 32 i8) against q8_0 activations stored as q + 128: per block, `(x + 128) · w`
 * in `dot4U8I8` started from −128 · Σw (Σw itself a `dot4U8I8` of ones with the block, once for all rows), then
 * `dw · dx` times the integer sum added to a vec4 f32 sum per row (one fma).
 */
export function fastQ8_0Loop(b: Builder, p: FastParts): void {
  const { let_, var_, for_, u32 } = b;
  const nb = let_(p.K.div(32), "nb");
  const sums = p.accs.map((r) => r.map(() => var_(zeroF(b), "fs")));
  const ones = b.vec("vec4<u32>", u32(0x01010101), u32(0x01010101), u32(0x01010101), u32(0x01010101));
  for_(
    u32(0),
    nb,
    1,
    (blk) => {
      const base = let_(p.n.mul(nb).add(blk).mul(34), "base");
      const ws = p.Ws.map((W) => {
        const lo = let_(W.at16x8(base.add(2)), "wl");
        const hi = let_(W.at16x8(base.add(18)), "wh");
        const wsum = b.dot4U8I8(b.dot4U8I8(zeroI(b), ones, lo), ones, hi);
        return { d: f16At(b, W, base), lo, hi, init: let_(wsum.mul(-128), "corr") };
      });
      p.rows.forEach((m, j) => {
        const bi = let_(m.mul(nb).add(blk), "bi");
        const xo = let_(bi.mul(32), "xo");
        const xl = let_(p.q.at16x8(xo), "xl");
        const xh = let_(p.q.at16x8(xo.add(16)), "xh");
        const dx = let_(p.d.at(bi), "dx");
        ws.forEach((w, h) => {
          const isum = b.dot4U8I8(b.dot4U8I8(w.init, xl, w.lo), xh, w.hi);
          const acc = sums[j]![h]!;
          acc.set(b.fma(isum.cast("vec4<f32>"), splatF(b, w.d.mul(dx)), acc));
        });
      });
    },
    "blk",
  );
  p.accs.forEach((r, j) => r.forEach((acc, h) => acc.set(hsum(b, sums[j]![h]!))));
}

/** The 6-bit scale and min of sub-block `j` of a Q4_K/Q5_K block's 12 scale bytes at `sc` (`get_scale_min_k4`). */
function scaleMin(b: Builder, W: Arr<"u8">, sc: Val<"u32">, j: number): [Val<"u32">, Val<"u32">] {
  const at = (i: number): Val<"u32"> => W.at(sc.add(i));
  if (j < 4) return [b.let_(at(j).and(63), "sc"), b.let_(at(j + 4).and(63), "mn")];
  return [
    b.let_(
      at(j + 4)
        .and(15)
        .or(
          at(j - 4)
            .shr(6)
            .shl(4),
        ),
      "sc",
    ),
    b.let_(
      at(j + 4)
        .shr(4)
        .or(at(j).shr(6).shl(4)),
      "mn",
    ),
  ];
}

/**
 * Q4_K weights (144-byte blocks of 256: f16 d, f16 dmin, 12 scale bytes, 128 nibble bytes) against q8_k activations:
 * per 32-element sub-block, nibbles · x in `dot4U8I8` times its 6-bit scale (integers, as llama.cpp), the block's
 * sum times `d · dx`; the mins as `dmin · dx · Σ m · Σx` from the quantizer's sums.
 */
export function fastQ4_KLoop(b: Builder, p: FastParts): void {
  const { let_, var_, for_, u32 } = b;
  const nb = let_(p.K.div(256), "nb");
  const sums = p.accs.map((r) => r.map(() => var_(zeroF(b), "fs")));
  const mins = p.accs.map((r) => r.map(() => var_(b.f32(0), "fm")));
  for_(
    u32(0),
    nb,
    1,
    (blk) => {
      const base = let_(p.n.mul(nb).add(blk).mul(144), "base");
      const ws = p.Ws.map((W) => {
        const sc = let_(base.add(4), "scb");
        const pairs = Array.from({ length: 8 }, (_, j) => scaleMin(b, W, sc, j));
        return { W, d: f16At(b, W, base), dmin: f16At(b, W, base.add(2)), pairs };
      });
      const isums = p.rows.map(() => ws.map(() => var_(zeroI(b), "is")));
      for (let c = 0; c < 4; c++) {
        const nib = ws.map(({ W }) => {
          const v0 = let_(W.at16x8(base.add(16 + 32 * c)), "v0");
          const v1 = let_(W.at16x8(base.add(32 + 32 * c)), "v1");
          return [v0.and(0x0f0f0f0f), v1.and(0x0f0f0f0f), v0.shr(4).and(0x0f0f0f0f), v1.shr(4).and(0x0f0f0f0f)].map(
            (v) => let_(v, "nb4"),
          );
        });
        p.rows.forEach((m, j) => {
          const xo = let_(
            m
              .mul(p.K)
              .add(blk.mul(256))
              .add(64 * c),
            "xo",
          );
          const xs = [0, 16, 32, 48].map((o) => let_(p.q.at16x8(xo.add(o)), "xq"));
          ws.forEach((w, h) => {
            const n4 = nib[h]!;
            const lo = b.dot4U8I8(b.dot4U8I8(zeroI(b), n4[0]!, xs[0]!), n4[1]!, xs[1]!);
            const hi = b.dot4U8I8(b.dot4U8I8(zeroI(b), n4[2]!, xs[2]!), n4[3]!, xs[3]!);
            const sl = splatI(b, w.pairs[2 * c]![0].cast("i32"));
            const sh = splatI(b, w.pairs[2 * c + 1]![0].cast("i32"));
            const is = isums[j]![h]!;
            is.set(is.add(lo.mul(sl)).add(hi.mul(sh)));
          });
        });
      }
      p.rows.forEach((m, j) => {
        const bi = let_(m.mul(nb).add(blk), "bi");
        const dx = let_(p.d.at(bi), "dx");
        const s0 = let_(bi.mul(8), "s0");
        ws.forEach((w, h) => {
          let msum: Val<"i32"> = b.i32(0);
          w.pairs.forEach(([, mn], g) => {
            msum = msum.add(mn.cast("i32").mul(p.s.at(s0.add(g))));
          });
          const acc = sums[j]![h]!;
          acc.set(b.fma(isums[j]![h]!.cast("vec4<f32>"), splatF(b, w.d.mul(dx)), acc));
          const mm = mins[j]![h]!;
          mm.set(mm.add(w.dmin.mul(dx).mul(msum.cast("f32"))));
        });
      });
    },
    "blk",
  );
  p.accs.forEach((r, j) => r.forEach((acc, h) => acc.set(hsum(b, sums[j]![h]!).sub(mins[j]![h]!))));
}

// GGML block formats re-expressed as graph-ir PackedFormats: decode recipes as data, so quantized weights
// stay packed inside traced graphs and DecodePacked (eval, later kernels) reads them per element.
import type { DecodeExpr, DecodeLoadType, PackedFormat } from "@poot/graph-ir";
import type { GGMLTypeName } from "./format.js";

// ── recipe construction helpers (element index `i` within a block) ──
const c = (value: number): DecodeExpr => ({ op: "const", value });
const I: DecodeExpr = { op: "i" };
const ld = (type: DecodeLoadType, offset: DecodeExpr | number): DecodeExpr => ({
  op: "load",
  type,
  offset: typeof offset === "number" ? c(offset) : offset,
});
type Bin = "add" | "sub" | "mul" | "idiv" | "mod" | "shl" | "shr" | "and" | "or" | "lt";
const op = (o: Bin, a: DecodeExpr | number, b: DecodeExpr | number): DecodeExpr => ({
  op: o,
  a: typeof a === "number" ? c(a) : a,
  b: typeof b === "number" ? c(b) : b,
});
const sel = (cond: DecodeExpr, a: DecodeExpr, b: DecodeExpr): DecodeExpr => ({ op: "select", cond, a, b });
const f32 = (a: DecodeExpr): DecodeExpr => ({ op: "f32", a });
const let_ = (name: string, value: DecodeExpr, body: DecodeExpr): DecodeExpr => ({ op: "let", name, value, body });
const v = (name: string): DecodeExpr => ({ op: "var", name });

/** Q8_0: f16 d, 32 × i8; x_i = d·q_i. */
const Q8_0: PackedFormat = {
  name: "q8_0",
  blockSize: 32,
  bytesPerBlock: 34,
  decode: op("mul", ld("f16", 0), ld("i8", op("add", I, 2))),
};

// Low nibble for elements 0..15 of a 32-block, high nibble for 16..31, from byte qs[i mod 16].
const nibble32 = (qsOffset: number): DecodeExpr =>
  let_(
    "byte",
    ld("u8", op("add", op("mod", I, 16), qsOffset)),
    sel(op("lt", I, 16), op("and", v("byte"), 15), op("shr", v("byte"), 4)),
  );

/** Q4_0: f16 d, 16 bytes of nibbles; x = d·(q − 8). */
const Q4_0: PackedFormat = {
  name: "q4_0",
  blockSize: 32,
  bytesPerBlock: 18,
  decode: op("mul", ld("f16", 0), op("sub", nibble32(2), 8)),
};

/** Q4_1: f16 d, f16 m, 16 bytes of nibbles; x = d·q + m. */
const Q4_1: PackedFormat = {
  name: "q4_1",
  blockSize: 32,
  bytesPerBlock: 20,
  decode: op("add", f32(op("mul", ld("f16", 0), nibble32(4))), ld("f16", 2)),
};

// Fifth bit of element i: bit i of the 32-bit qh word (ggml's xh_0 / xh_1 split reduces to this).
const q5 = (qhOffset: number, qsOffset: number): DecodeExpr =>
  op("or", nibble32(qsOffset), op("shl", op("and", op("shr", ld("u32", qhOffset), I), 1), 4));

/** Q5_0: f16 d, u32 qh, 16 bytes of nibbles; x = d·(q5 − 16). */
const Q5_0: PackedFormat = {
  name: "q5_0",
  blockSize: 32,
  bytesPerBlock: 22,
  decode: op("mul", ld("f16", 0), op("sub", q5(2, 6), 16)),
};

/** Q5_1: f16 d, f16 m, u32 qh, 16 bytes of nibbles; x = d·q5 + m. */
const Q5_1: PackedFormat = {
  name: "q5_1",
  blockSize: 32,
  bytesPerBlock: 24,
  decode: op("add", f32(op("mul", ld("f16", 0), q5(4, 8))), ld("f16", 2)),
};

// K-quant 6-bit scale/min of sub-block j (ggml get_scale_min_k4); offsets stay inside the scales for every j, so both select arms are safe to evaluate.
const scaleK4 = (j: DecodeExpr, base: number, min: boolean): DecodeExpr => {
  const q = (off: DecodeExpr): DecodeExpr => ld("u8", op("add", off, base));
  const lo = min ? op("and", q(op("add", j, 4)), 63) : op("and", q(op("mod", j, 4)), 63);
  const hiLow = min ? op("shr", q(op("add", op("mod", j, 4), 8)), 4) : op("and", q(op("add", op("mod", j, 4), 8)), 15);
  const hiTop = op("shl", op("shr", q(min ? j : op("mod", j, 4)), 6), 4);
  return sel(op("lt", j, 4), lo, op("or", hiLow, hiTop));
};

/** Q4_K: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of nibbles; x = d·sc·q − dmin·m per 32-element sub-block. */
const Q4_K: PackedFormat = {
  name: "q4_k",
  blockSize: 256,
  bytesPerBlock: 144,
  decode: let_(
    "j",
    op("idiv", I, 32),
    let_(
      "byte",
      ld("u8", op("add", op("add", op("mul", op("idiv", I, 64), 32), op("mod", I, 32)), 16)),
      op(
        "sub",
        op(
          "mul",
          f32(op("mul", ld("f16", 0), scaleK4(v("j"), 4, false))),
          sel(op("lt", op("mod", I, 64), 32), op("and", v("byte"), 15), op("shr", v("byte"), 4)),
        ),
        f32(op("mul", ld("f16", 2), scaleK4(v("j"), 4, true))),
      ),
    ),
  ),
};

/** Q6_K: 128 bytes low nibbles, 64 bytes of 2-bit highs, 16 × i8 scales, f16 d; x = d·sc·(q6 − 32) per 16 elements. */
const Q6_K: PackedFormat = {
  name: "q6_k",
  blockSize: 256,
  bytesPerBlock: 210,
  decode: let_(
    "h",
    op("idiv", I, 128),
    let_(
      "qq",
      op("idiv", op("mod", I, 128), 32),
      let_(
        "l",
        op("mod", I, 32),
        let_(
          "lb",
          ld("u8", op("add", op("add", op("mul", v("h"), 64), v("l")), op("mul", op("mod", v("qq"), 2), 32))),
          op(
            "mul",
            f32(
              op(
                "mul",
                ld("f16", 208),
                ld(
                  "i8",
                  op(
                    "add",
                    op("add", op("add", 192, op("mul", v("h"), 8)), op("idiv", v("l"), 16)),
                    op("mul", v("qq"), 2),
                  ),
                ),
              ),
            ),
            op(
              "sub",
              op(
                "or",
                sel(op("lt", v("qq"), 2), op("and", v("lb"), 15), op("shr", v("lb"), 4)),
                op(
                  "shl",
                  op(
                    "and",
                    op(
                      "shr",
                      ld("u8", op("add", op("add", 128, op("mul", v("h"), 32)), v("l"))),
                      op("mul", v("qq"), 2),
                    ),
                    3,
                  ),
                  4,
                ),
              ),
              32,
            ),
          ),
        ),
      ),
    ),
  ),
};

/** Q5_K: f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 32 bytes of fifth bits, 128 bytes of nibbles. */
const Q5_K: PackedFormat = {
  name: "q5_k",
  blockSize: 256,
  bytesPerBlock: 176,
  decode: let_(
    "j",
    op("idiv", I, 32),
    let_(
      "byte",
      ld("u8", op("add", op("add", op("mul", op("idiv", I, 64), 32), op("mod", I, 32)), 48)),
      op(
        "sub",
        op(
          "mul",
          f32(op("mul", ld("f16", 0), scaleK4(v("j"), 4, false))),
          op(
            "add",
            sel(op("lt", op("mod", I, 64), 32), op("and", v("byte"), 15), op("shr", v("byte"), 4)),
            op("shl", op("and", op("shr", ld("u8", op("add", op("mod", I, 32), 16)), v("j")), 1), 4),
          ),
        ),
        f32(op("mul", ld("f16", 2), scaleK4(v("j"), 4, true))),
      ),
    ),
  ),
};

// Position of element i in the 2-bit K-quant layouts (Q2_K, Q3_K): half h of 128, quarter jj, lane w.
const h128 = op("idiv", I, 128),
  jj = op("idiv", op("mod", I, 128), 32),
  w32 = op("mod", I, 32);
const crumb = (qsOffset: number): DecodeExpr =>
  op("and", op("shr", ld("u8", op("add", op("add", op("mul", h128, 32), w32), qsOffset)), op("mul", jj, 2)), 3);

/** Q2_K: 16 bytes of 4-bit scale|min pairs, 64 bytes of 2-bit quants, f16 d, f16 dmin; x = d·sc·q − dmin·m per 16. */
const Q2_K: PackedFormat = {
  name: "q2_k",
  blockSize: 256,
  bytesPerBlock: 84,
  decode: let_(
    "sc",
    ld("u8", op("idiv", I, 16)),
    op(
      "sub",
      op("mul", f32(op("mul", ld("f16", 80), op("and", v("sc"), 15))), crumb(16)),
      f32(op("mul", ld("f16", 82), op("shr", v("sc"), 4))),
    ),
  ),
};

// Q3_K's 16 six-bit scales: low nibbles from bytes 0..7, two high bits from bytes 8..11 (ggml's kmask unpacking).
const q3Scale = (s: DecodeExpr): DecodeExpr =>
  op(
    "sub",
    op(
      "or",
      sel(
        op("lt", s, 8),
        op("and", ld("u8", op("add", op("mod", s, 8), 96)), 15),
        op("shr", ld("u8", op("add", op("mod", s, 8), 96)), 4),
      ),
      op("shl", op("and", op("shr", ld("u8", op("add", op("mod", s, 4), 104)), op("mul", op("idiv", s, 4), 2)), 3), 4),
    ),
    32,
  );

/** Q3_K: 32 bytes of high-bit masks, 64 bytes of 2-bit quants, 12 bytes of 6-bit scales, f16 d; x = d·(sc−32)·(q − 4·!hbit). */
const Q3_K: PackedFormat = {
  name: "q3_k",
  blockSize: 256,
  bytesPerBlock: 110,
  decode: op(
    "mul",
    f32(op("mul", ld("f16", 108), q3Scale(op("idiv", I, 16)))),
    op(
      "sub",
      crumb(32),
      op("mul", op("sub", 1, op("and", op("shr", ld("u8", w32), op("add", op("mul", h128, 4), jj)), 1)), 4),
    ),
  ),
};

// A table of entries indexed by `q` as a balanced tree of selects (the descriptor language has no table op).
const tree = (q: DecodeExpr, leaf: (k: number) => DecodeExpr, lo: number, hi: number): DecodeExpr => {
  if (lo === hi) return leaf(lo);
  const mid = (lo + hi + 1) >> 1;
  return sel(op("lt", q, mid), tree(q, leaf, lo, mid - 1), tree(q, leaf, mid, hi));
};
// A u32 constant built from two 16-bit halves: kernelgen emits integer consts as i32 only below 2^31, and folds or
// hoists this (it does not depend on the element).
const u32c = (w: number): DecodeExpr => op("or", op("shl", w >>> 16, 16), w & 0xffff);
const IQ4NL_LEVELS = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];
// The 16 levels as biased bytes (level + 128) packed four to a u32 word, nibble q at byte q & 3 of word q >> 2.
const IQ4NL_WORDS = [0, 1, 2, 3].map((k) =>
  [0, 1, 2, 3].reduce((w, j) => w + (IQ4NL_LEVELS[4 * k + j]! + 128) * 2 ** (8 * j), 0),
);
// Level of nibble q: the word chosen by bits 3 and 2 (select on the bit, no compare), its byte shifted out; ~10 ops
// per element where a 16-leaf select tree takes ~30 (the CPU kernels unroll blocks, and Wasm caps a function's locals).
const iq4nl = (q: DecodeExpr): DecodeExpr =>
  let_(
    "q",
    q,
    let_(
      "b2",
      op("and", v("q"), 4),
      op(
        "sub",
        op(
          "and",
          op(
            "shr",
            sel(
              op("and", v("q"), 8),
              sel(v("b2"), u32c(IQ4NL_WORDS[3]!), u32c(IQ4NL_WORDS[2]!)),
              sel(v("b2"), u32c(IQ4NL_WORDS[1]!), u32c(IQ4NL_WORDS[0]!)),
            ),
            op("shl", op("and", v("q"), 3), 3),
          ),
          255,
        ),
        128,
      ),
    ),
  );

/** IQ4_NL: f16 d, 16 bytes of nibbles indexing ggml's 16 non-linear int8 levels; x = d·levels[q]. */
const IQ4_NL: PackedFormat = {
  name: "iq4_nl",
  blockSize: 32,
  bytesPerBlock: 18,
  decode: op("mul", ld("f16", 0), iq4nl(nibble32(2))),
};

/** IQ4_XS: f16 d, u16 scales_h, 4 bytes scales_l, 128 bytes of nibbles; x = f32(d·(ls − 32))·levels[q] per 32. */
const IQ4_XS: PackedFormat = {
  name: "iq4_xs",
  blockSize: 256,
  bytesPerBlock: 136,
  decode: let_(
    "ib",
    op("idiv", I, 32),
    let_(
      "byte",
      ld("u8", op("add", op("add", op("mul", v("ib"), 16), op("mod", I, 16)), 8)),
      op(
        "mul",
        f32(
          op(
            "mul",
            ld("f16", 0),
            op(
              "sub",
              op(
                "or",
                op(
                  "and",
                  op("shr", ld("u8", op("add", op("idiv", v("ib"), 2), 4)), op("mul", op("mod", v("ib"), 2), 4)),
                  15,
                ),
                op("shl", op("and", op("shr", ld("u16", 2), op("mul", v("ib"), 2)), 3), 4),
              ),
              32,
            ),
          ),
        ),
        iq4nl(sel(op("lt", op("mod", I, 32), 16), op("and", v("byte"), 15), op("shr", v("byte"), 4))),
      ),
    ),
  ),
};

// 2^(e − 128) of the E8M0 byte e: 2^(e & 31) times 2^(32·(e >> 5) − 128), split in two factors for e < 32 so no
// constant is subnormal (results are, for e < 2, as in ggml).
const e8m0Half = (at: number): DecodeExpr =>
  let_(
    "e",
    ld("u8", at),
    let_(
      "j",
      op("shr", v("e"), 5),
      op(
        "mul",
        f32(
          op(
            "mul",
            f32(op("shl", 1, op("and", v("e"), 31))),
            tree(v("j"), (k) => c(k === 0 ? 2 ** -64 : 2 ** (32 * k - 128)), 0, 7),
          ),
        ),
        sel(op("lt", v("j"), 1), c(2 ** -64), c(1)),
      ),
    ),
  );

// MXFP4 level (E2M1 doubled) of nibble q: magnitude m = q & 7 is m (m < 4) or (2 + (m & 1)) << ((m >> 1) − 1); bit 3 is the sign.
const fp4 = (q: DecodeExpr): DecodeExpr =>
  let_(
    "q",
    q,
    let_(
      "m",
      op("and", v("q"), 7),
      let_(
        "mag",
        sel(
          op("lt", v("m"), 4),
          v("m"),
          op("shl", op("add", op("and", v("m"), 1), 2), op("sub", op("shr", v("m"), 1), 1)),
        ),
        sel(op("lt", v("q"), 8), v("mag"), op("sub", 0, v("mag"))),
      ),
    ),
  );

/** MXFP4: E8M0 scale byte, 16 bytes of E2M1 nibbles; x = levels[q]·2^(e − 128). */
const MXFP4: PackedFormat = {
  name: "mxfp4",
  blockSize: 32,
  bytesPerBlock: 17,
  decode: op("mul", fp4(nibble32(1)), e8m0Half(0)),
};

const RECIPES: Partial<Record<GGMLTypeName, PackedFormat>> = {
  Q8_0,
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q2_K,
  Q3_K,
  Q4_K,
  Q5_K,
  Q6_K,
  IQ4_NL,
  IQ4_XS,
  MXFP4,
};

/** The graph-ir PackedFormat of a GGML block type, or null when no recipe exists (plain float types included). */
export function ggmlPackedFormat(type: string): PackedFormat | null {
  return RECIPES[type as GGMLTypeName] ?? null;
}

/** GGML block types that traced graphs can keep packed. */
export const PACKED_GGML_TYPES: readonly GGMLTypeName[] = Object.keys(RECIPES) as GGMLTypeName[];

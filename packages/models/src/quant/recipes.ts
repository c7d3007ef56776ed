// GGML block formats re-expressed as graph-ir PackedFormats: decode recipes as data, so quantized weights
// stay packed inside traced graphs and DecodePacked (eval, later kernels) reads them per element.
import type { DecodeExpr, PackedFormat } from "@poot/graph-ir";
import type { GGMLTypeName } from "./format.js";
import { I, ld, op, sel, f32, let_, v, nibble32 } from "./recipe-exprs.js";
import { IQ4_NL, IQ4_XS, MXFP4 } from "./recipes-nonlinear.js";

/** Q8_0: f16 d, 32 × i8; x_i = d·q_i. */
const Q8_0: PackedFormat = {
  name: "q8_0",
  blockSize: 32,
  bytesPerBlock: 34,
  decode: op("mul", ld("f16", 0), ld("i8", op("add", I, 2))),
};

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

// Decode recipes of ggml's table-valued formats as graph-ir PackedFormats: IQ4_NL and IQ4_XS (16 non-linear int8
// levels) and MXFP4 (E2M1 values times an E8M0 power-of-two scale), the levels selected by a comparison tree.
import type { DecodeExpr, PackedFormat } from "@poot/graph-ir";
import { c, I, ld, op, sel, f32, let_, v, nibble32 } from "./recipe-exprs.js";

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
export const IQ4_NL: PackedFormat = {
  name: "iq4_nl",
  blockSize: 32,
  bytesPerBlock: 18,
  decode: op("mul", ld("f16", 0), iq4nl(nibble32(2))),
};

/** IQ4_XS: f16 d, u16 scales_h, 4 bytes scales_l, 128 bytes of nibbles; x = f32(d·(ls − 32))·levels[q] per 32. */
export const IQ4_XS: PackedFormat = {
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
export const MXFP4: PackedFormat = {
  name: "mxfp4",
  blockSize: 32,
  bytesPerBlock: 17,
  decode: op("mul", fp4(nibble32(1)), e8m0Half(0)),
};

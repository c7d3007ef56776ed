// Reference decoders of ggml's table-valued formats: IQ4_NL and IQ4_XS (a 16-entry non-linear grid of int8 levels)
// and MXFP4 (E2M1 values, doubled to integers, times an E8M0 power-of-two scale). Layouts follow ggml-common.h
// block_iq4_nl / block_iq4_xs / block_mxfp4, arithmetic ggml-quants.c dequantize_row_iq4_nl / _iq4_xs / _mxfp4.
import { f16Lut } from "../halfs.js";
import type { QuantFormat } from "./format.js";

const lut = f16Lut();
const f16At = (b: Uint8Array, o: number): number => lut[b[o]! | (b[o + 1]! << 8)]!;

/** ggml's `kvalues_iq4nl`: the 16 levels of IQ4_NL and IQ4_XS, indexed by a nibble. */
export const IQ4NL_LEVELS: readonly number[] = [
  -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

/** ggml's `kvalues_mxfp4`: E2M1 (sign, 2-bit exponent, 1-bit mantissa) values times two, indexed by a nibble. */
export const MXFP4_LEVELS: readonly number[] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/** IQ4_NL: {f16 d; u8 qs[16]}; x = d · levels[nibble] (element j low nibble, j + 16 high nibble of byte j). */
export const IQ4_NL: QuantFormat = {
  name: "IQ4_NL",
  ggmlType: 20,
  blockElems: 32,
  blockBytes: 18,
  fields: [
    { name: "d", offset: 0, kind: "f16", count: 1 },
    { name: "qs", offset: 2, kind: "u8", count: 16 },
  ],
  decodeBlock(b, o, out, oo) {
    const d = f16At(b, o);
    for (let j = 0; j < 16; j++) {
      const q = b[o + 2 + j]!;
      out[oo + j] = d * IQ4NL_LEVELS[q & 0xf]!;
      out[oo + j + 16] = d * IQ4NL_LEVELS[q >> 4]!;
    }
  },
};

/**
 * IQ4_XS: {f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]}: 8 sub-blocks of 32, each with a 6-bit scale (low 4 bits
 * in scales_l, high 2 in scales_h, offset 32); x = f32(d · (ls − 32)) · levels[nibble].
 */
export const IQ4_XS: QuantFormat = {
  name: "IQ4_XS",
  ggmlType: 23,
  blockElems: 256,
  blockBytes: 136,
  fields: [
    { name: "d", offset: 0, kind: "f16", count: 1 },
    { name: "scales_h", offset: 2, kind: "u16", count: 1 },
    { name: "scales_l", offset: 4, kind: "u8", count: 4 },
    { name: "qs", offset: 8, kind: "u8", count: 128 },
  ],
  decodeBlock(b, o, out, oo) {
    const d = f16At(b, o);
    const sh = b[o + 2]! | (b[o + 3]! << 8);
    for (let ib = 0; ib < 8; ib++) {
      const ls = ((b[o + 4 + (ib >> 1)]! >> (4 * (ib & 1))) & 0xf) | (((sh >> (2 * ib)) & 3) << 4);
      const dl = Math.fround(d * (ls - 32));
      const qs = o + 8 + 16 * ib,
        y = oo + 32 * ib;
      for (let j = 0; j < 16; j++) {
        out[y + j] = dl * IQ4NL_LEVELS[b[qs + j]! & 0xf]!;
        out[y + j + 16] = dl * IQ4NL_LEVELS[b[qs + j]! >> 4]!;
      }
    }
  },
};

/** MXFP4: {u8 e; u8 qs[16]}; x = levels[nibble] · 2^(e − 128) (the doubled levels absorb E8M0's 2^(e − 127)). */
export const MXFP4: QuantFormat = {
  name: "MXFP4",
  ggmlType: 39,
  blockElems: 32,
  blockBytes: 17,
  fields: [
    { name: "e", offset: 0, kind: "u8", count: 1 },
    { name: "qs", offset: 1, kind: "u8", count: 16 },
  ],
  decodeBlock(b, o, out, oo) {
    // A power of two times a small integer: exact in f32 (subnormal for e < 2, as in ggml).
    const d = 2 ** (b[o]! - 128);
    for (let j = 0; j < 16; j++) {
      const q = b[o + 1 + j]!;
      out[oo + j] = MXFP4_LEVELS[q & 0xf]! * d;
      out[oo + j + 16] = MXFP4_LEVELS[q >> 4]! * d;
    }
  },
};

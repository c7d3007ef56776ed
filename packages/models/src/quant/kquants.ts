// Reference decoders of ggml's K-quants (256-element super-blocks): Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
// Layouts and arithmetic follow ggml-common.h block_q*_K and ggml-quants.c dequantize_row_q*_K.
import { f16Lut } from "../halfs.js";
import type { QuantFormat } from "./format.js";

const lut = f16Lut();
const f16At = (b: Uint8Array, o: number): number => lut[b[o]! | (b[o + 1]! << 8)]!;
/** Elements per K-quant super-block. */
export const QK_K = 256;

/** Q2_K: {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin}; 16 sub-blocks of 16, 4-bit scale and min each. */
export const Q2_K: QuantFormat = {
  name: "Q2_K",
  ggmlType: 10,
  blockElems: QK_K,
  blockBytes: 84,
  fields: [
    { name: "scales", offset: 0, kind: "u8", count: 16 },
    { name: "qs", offset: 16, kind: "u8", count: 64 },
    { name: "d", offset: 80, kind: "f16", count: 1 },
    { name: "dmin", offset: 82, kind: "f16", count: 1 },
  ],
  decodeBlock(b, o, out, oo) {
    const d = f16At(b, o + 80);
    const min = f16At(b, o + 82);
    let is = 0;
    let y = oo;
    for (let n = 0; n < 2; n++) {
      const q = o + 16 + 32 * n;
      for (let shift = 0; shift < 8; shift += 2) {
        for (let half = 0; half < 2; half++) {
          const sc = b[o + is++]!;
          const dl = d * (sc & 0xf);
          const ml = min * (sc >> 4);
          for (let l = 0; l < 16; l++) out[y++] = dl * ((b[q + 16 * half + l]! >> shift) & 3) - ml;
        }
      }
    }
  },
};

/** Q3_K: {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}; 6-bit signed scales (offset 32), high bit from hmask. */
export const Q3_K: QuantFormat = {
  name: "Q3_K",
  ggmlType: 11,
  blockElems: QK_K,
  blockBytes: 110,
  fields: [
    { name: "hmask", offset: 0, kind: "u8", count: 32 },
    { name: "qs", offset: 32, kind: "u8", count: 64 },
    { name: "scales", offset: 96, kind: "u8", count: 12 },
    { name: "d", offset: 108, kind: "f16", count: 1 },
  ],
  decodeBlock(b, o, out, oo) {
    const dAll = f16At(b, o + 108);
    const s = o + 96;
    // Scale i: low 4 bits from byte i%8 (low nibble for i<8, high for i>=8), high 2 bits from byte 8 + i%4.
    const scales = new Int8Array(16);
    for (let i = 0; i < 16; i++) {
      const low = i < 8 ? b[s + i]! & 0xf : b[s + i - 8]! >> 4;
      const high = (b[s + 8 + (i % 4)]! >> (2 * (i >> 2))) & 3;
      scales[i] = (low | (high << 4)) - 32;
    }
    let is = 0;
    let m = 1;
    let y = oo;
    for (let n = 0; n < 2; n++) {
      const q = o + 32 + 32 * n;
      for (let shift = 0; shift < 8; shift += 2) {
        for (let half = 0; half < 2; half++) {
          const dl = dAll * scales[is++]!;
          for (let l = 0; l < 16; l++) {
            const k = 16 * half + l;
            const v = ((b[q + k]! >> shift) & 3) - (b[o + k]! & m ? 0 : 4);
            out[y++] = dl * v;
          }
        }
        m <<= 1;
      }
    }
  },
};

/** Unpacks the 6-bit scale and min of sub-block j (0..7) from the 12-byte Q4_K/Q5_K `scales` field. */
export function scaleMinK4(b: Uint8Array, s: number, j: number): [number, number] {
  if (j < 4) return [b[s + j]! & 63, b[s + j + 4]! & 63];
  return [(b[s + j + 4]! & 0xf) | ((b[s + j - 4]! >> 6) << 4), (b[s + j + 4]! >> 4) | ((b[s + j]! >> 6) << 4)];
}

/** Q4_K: {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}; 8 sub-blocks of 32, 6-bit scale and min each. */
export const Q4_K: QuantFormat = {
  name: "Q4_K",
  ggmlType: 12,
  blockElems: QK_K,
  blockBytes: 144,
  fields: [
    { name: "d", offset: 0, kind: "f16", count: 1 },
    { name: "dmin", offset: 2, kind: "f16", count: 1 },
    { name: "scales", offset: 4, kind: "u8", count: 12 },
    { name: "qs", offset: 16, kind: "u8", count: 128 },
  ],
  decodeBlock(b, o, out, oo) {
    const d = f16At(b, o);
    const min = f16At(b, o + 2);
    let y = oo;
    for (let j = 0; j < 4; j++) {
      const [sc1, m1] = scaleMinK4(b, o + 4, 2 * j);
      const [sc2, m2] = scaleMinK4(b, o + 4, 2 * j + 1);
      const d1 = d * sc1,
        mm1 = min * m1,
        d2 = d * sc2,
        mm2 = min * m2;
      const q = o + 16 + 32 * j;
      for (let l = 0; l < 32; l++) out[y++] = d1 * (b[q + l]! & 0xf) - mm1;
      for (let l = 0; l < 32; l++) out[y++] = d2 * (b[q + l]! >> 4) - mm2;
    }
  },
};

/** Q5_K: {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}; Q4_K plus a fifth bit per element from qh. */
export const Q5_K: QuantFormat = {
  name: "Q5_K",
  ggmlType: 13,
  blockElems: QK_K,
  blockBytes: 176,
  fields: [
    { name: "d", offset: 0, kind: "f16", count: 1 },
    { name: "dmin", offset: 2, kind: "f16", count: 1 },
    { name: "scales", offset: 4, kind: "u8", count: 12 },
    { name: "qh", offset: 16, kind: "u8", count: 32 },
    { name: "qs", offset: 48, kind: "u8", count: 128 },
  ],
  decodeBlock(b, o, out, oo) {
    const d = f16At(b, o);
    const min = f16At(b, o + 2);
    let y = oo;
    for (let j = 0; j < 4; j++) {
      const [sc1, m1] = scaleMinK4(b, o + 4, 2 * j);
      const [sc2, m2] = scaleMinK4(b, o + 4, 2 * j + 1);
      const d1 = d * sc1,
        mm1 = min * m1,
        d2 = d * sc2,
        mm2 = min * m2;
      const q = o + 48 + 32 * j;
      const u1 = 1 << (2 * j),
        u2 = 2 << (2 * j);
      for (let l = 0; l < 32; l++) out[y++] = d1 * ((b[q + l]! & 0xf) + (b[o + 16 + l]! & u1 ? 16 : 0)) - mm1;
      for (let l = 0; l < 32; l++) out[y++] = d2 * ((b[q + l]! >> 4) + (b[o + 16 + l]! & u2 ? 16 : 0)) - mm2;
    }
  },
};

/** Q6_K: {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}; 16 sub-blocks of 16, 6-bit values offset by 32. */
export const Q6_K: QuantFormat = {
  name: "Q6_K",
  ggmlType: 14,
  blockElems: QK_K,
  blockBytes: 210,
  fields: [
    { name: "ql", offset: 0, kind: "u8", count: 128 },
    { name: "qh", offset: 128, kind: "u8", count: 64 },
    { name: "scales", offset: 192, kind: "i8", count: 16 },
    { name: "d", offset: 208, kind: "f16", count: 1 },
  ],
  decodeBlock(b, o, out, oo) {
    const d = f16At(b, o + 208);
    const sc = (i: number): number => (b[o + 192 + i]! << 24) >> 24;
    for (let n = 0; n < 2; n++) {
      const ql = o + 64 * n,
        qh = o + 128 + 32 * n,
        s = 8 * n,
        y = oo + 128 * n;
      for (let l = 0; l < 32; l++) {
        const is = l >> 4;
        const h = b[qh + l]!;
        const q1 = ((b[ql + l]! & 0xf) | ((h & 3) << 4)) - 32;
        const q2 = ((b[ql + l + 32]! & 0xf) | (((h >> 2) & 3) << 4)) - 32;
        const q3 = ((b[ql + l]! >> 4) | (((h >> 4) & 3) << 4)) - 32;
        const q4 = ((b[ql + l + 32]! >> 4) | (((h >> 6) & 3) << 4)) - 32;
        out[y + l] = d * sc(s + is) * q1;
        out[y + l + 32] = d * sc(s + is + 2) * q2;
        out[y + l + 64] = d * sc(s + is + 4) * q3;
        out[y + l + 96] = d * sc(s + is + 6) * q4;
      }
    }
  },
};

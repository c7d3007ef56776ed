// Reference decoders of ggml's 32-element formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) and plain floats.
// Layouts follow ggml-common.h block_q*; element j and j+16 share byte j of `qs` (low, high nibble).
import { f16Lut } from "../halfs.js";
import type { QuantFormat } from "./format.js";

const lut = f16Lut();
const f16At = (b: Uint8Array, o: number): number => lut[b[o]! | (b[o + 1]! << 8)]!;
const u32At = (b: Uint8Array, o: number): number =>
  (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
const f32Scratch = new Float32Array(1);
const u8Scratch = new Uint8Array(f32Scratch.buffer);

/** F32: one element per 4-byte block. */
export const F32: QuantFormat = {
  name: "F32",
  ggmlType: 0,
  blockElems: 1,
  blockBytes: 4,
  fields: [{ name: "v", offset: 0, kind: "f32", count: 1 }],
  decodeBlock(b, o, out, oo) {
    u8Scratch[0] = b[o]!;
    u8Scratch[1] = b[o + 1]!;
    u8Scratch[2] = b[o + 2]!;
    u8Scratch[3] = b[o + 3]!;
    out[oo] = f32Scratch[0]!;
  },
};

/** F16 (IEEE binary16), widened exactly. */
export const F16: QuantFormat = {
  name: "F16",
  ggmlType: 1,
  blockElems: 1,
  blockBytes: 2,
  fields: [{ name: "v", offset: 0, kind: "f16", count: 1 }],
  decodeBlock(b, o, out, oo) {
    out[oo] = f16At(b, o);
  },
};

const u32Scratch = new Uint32Array(1);
const u32AsF32 = new Float32Array(u32Scratch.buffer);

/** BF16, widened exactly (the top 16 bits of an f32). */
export const BF16: QuantFormat = {
  name: "BF16",
  ggmlType: 30,
  blockElems: 1,
  blockBytes: 2,
  fields: [{ name: "v", offset: 0, kind: "bf16", count: 1 }],
  decodeBlock(b, o, out, oo) {
    u32Scratch[0] = (b[o]! | (b[o + 1]! << 8)) << 16;
    out[oo] = u32AsF32[0]!;
  },
};

/** Q4_0: {f16 d; u8 qs[16]}; x = (nibble - 8) * d. */
export const Q4_0: QuantFormat = {
  name: "Q4_0",
  ggmlType: 2,
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
      out[oo + j] = ((q & 0xf) - 8) * d;
      out[oo + j + 16] = ((q >> 4) - 8) * d;
    }
  },
};

/** Q4_1: {f16 d; f16 m; u8 qs[16]}; x = nibble * d + m. */
export const Q4_1: QuantFormat = {
  name: "Q4_1",
  ggmlType: 3,
  blockElems: 32,
  blockBytes: 20,
  fields: [
    { name: "d", offset: 0, kind: "f16", count: 1 },
    { name: "m", offset: 2, kind: "f16", count: 1 },
    { name: "qs", offset: 4, kind: "u8", count: 16 },
  ],
  decodeBlock(b, o, out, oo) {
    const d = f16At(b, o);
    const m = f16At(b, o + 2);
    for (let j = 0; j < 16; j++) {
      const q = b[o + 4 + j]!;
      out[oo + j] = (q & 0xf) * d + m;
      out[oo + j + 16] = (q >> 4) * d + m;
    }
  },
};

/** Q5_0: {f16 d; u8 qh[4]; u8 qs[16]}; bit j of qh (u32) is bit 4 of element j; x = (q5 - 16) * d. */
export const Q5_0: QuantFormat = {
  name: "Q5_0",
  ggmlType: 6,
  blockElems: 32,
  blockBytes: 22,
  fields: [
    { name: "d", offset: 0, kind: "f16", count: 1 },
    { name: "qh", offset: 2, kind: "u8", count: 4 },
    { name: "qs", offset: 6, kind: "u8", count: 16 },
  ],
  decodeBlock(b, o, out, oo) {
    const d = f16At(b, o);
    const qh = u32At(b, o + 2);
    for (let j = 0; j < 16; j++) {
      const q = b[o + 6 + j]!;
      const h0 = ((qh >>> j) & 1) << 4;
      const h1 = ((qh >>> (j + 16)) & 1) << 4;
      out[oo + j] = (((q & 0xf) | h0) - 16) * d;
      out[oo + j + 16] = (((q >> 4) | h1) - 16) * d;
    }
  },
};

/** Q5_1: {f16 d; f16 m; u8 qh[4]; u8 qs[16]}; x = q5 * d + m. */
export const Q5_1: QuantFormat = {
  name: "Q5_1",
  ggmlType: 7,
  blockElems: 32,
  blockBytes: 24,
  fields: [
    { name: "d", offset: 0, kind: "f16", count: 1 },
    { name: "m", offset: 2, kind: "f16", count: 1 },
    { name: "qh", offset: 4, kind: "u8", count: 4 },
    { name: "qs", offset: 8, kind: "u8", count: 16 },
  ],
  decodeBlock(b, o, out, oo) {
    const d = f16At(b, o);
    const m = f16At(b, o + 2);
    const qh = u32At(b, o + 4);
    for (let j = 0; j < 16; j++) {
      const q = b[o + 8 + j]!;
      out[oo + j] = ((q & 0xf) | (((qh >>> j) & 1) << 4)) * d + m;
      out[oo + j + 16] = ((q >> 4) | (((qh >>> (j + 16)) & 1) << 4)) * d + m;
    }
  },
};

/** Q8_0: {f16 d; i8 qs[32]}; x = q * d. */
export const Q8_0: QuantFormat = {
  name: "Q8_0",
  ggmlType: 8,
  blockElems: 32,
  blockBytes: 34,
  fields: [
    { name: "d", offset: 0, kind: "f16", count: 1 },
    { name: "qs", offset: 2, kind: "i8", count: 32 },
  ],
  decodeBlock(b, o, out, oo) {
    const d = f16At(b, o);
    for (let j = 0; j < 32; j++) out[oo + j] = ((b[o + 2 + j]! << 24) >> 24) * d;
  },
};

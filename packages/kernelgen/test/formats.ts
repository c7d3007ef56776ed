// Packed formats as data for the tests (GGUF Q8_0 and Q4_0, as graph-ir's tests define them), and helpers that
// make random blocks and hand packed bytes to kernels as little-endian u32 words.

import { f32ToF16Bits } from "@poot/graph-ir";
import type { DecodeExpr, PackedFormat } from "@poot/graph-ir";

const c = (value: number): DecodeExpr => ({ op: "const", value });
const i: DecodeExpr = { op: "i" };

/** GGUF Q8_0: f16 scale d at byte 0, then 32 int8 quants; x_i = d · q_i. */
export const Q8_0: PackedFormat = {
  name: "q8_0", blockSize: 32, bytesPerBlock: 34,
  decode: { op: "mul", a: { op: "load", type: "f16", offset: c(0) }, b: { op: "load", type: "i8", offset: { op: "add", a: c(2), b: i } } },
};

/** GGUF Q4_0: f16 d, 16 bytes of nibbles; x_j = d·((qs[j]&15)-8), x_{j+16} = d·((qs[j]>>4)-8). */
export const Q4_0: PackedFormat = {
  name: "q4_0", blockSize: 32, bytesPerBlock: 18,
  decode: {
    op: "let", name: "d", value: { op: "load", type: "f16", offset: c(0) },
    body: {
      op: "mul", a: { op: "var", name: "d" },
      b: {
        op: "sub",
        a: { op: "and", a: { op: "shr", a: { op: "load", type: "u8", offset: { op: "add", a: c(2), b: { op: "and", a: i, b: c(15) } } }, b: { op: "mul", a: { op: "shr", a: i, b: c(4) }, b: c(4) } }, b: c(15) },
        b: c(8),
      },
    },
  },
};

/** `blocks` random blocks of `f`: every byte random except each f16 scale (at byte 0) set to a modest random value. */
export function randomBlocks(r: () => number, f: PackedFormat, blocks: number): Uint8Array {
  const bytes = new Uint8Array(blocks * f.bytesPerBlock);
  for (let j = 0; j < bytes.length; j++) bytes[j] = Math.floor(r() * 256);
  for (let b = 0; b < blocks; b++) {
    const h = f32ToF16Bits((r() * 2 - 1) * 0.05);
    bytes[b * f.bytesPerBlock] = h & 0xff;
    bytes[b * f.bytesPerBlock + 1] = h >> 8;
  }
  return bytes;
}

/** Bytes as little-endian u32 words, zero-padded to a multiple of 4 bytes. */
export function toWords(bytes: Uint8Array): Uint32Array {
  const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
  padded.set(bytes);
  return new Uint32Array(padded.buffer);
}

/** The first `n` bytes of little-endian u32 words. */
export function fromWords(words: Uint32Array, n: number): Uint8Array {
  return new Uint8Array(words.buffer, words.byteOffset, n).slice();
}

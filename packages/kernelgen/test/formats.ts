// Packed formats as data for the tests (GGUF Q8_0 and Q4_0, as graph-ir's tests define them), and helpers that
// make random blocks and hand packed bytes to kernels as little-endian u32 words.

import { Builder, evaluate, f32ToF16Bits } from "@poot/graph-ir";
import type { DecodeExpr, PackedFormat } from "@poot/graph-ir";
import type { SynthKernel } from "@poot/kernelgen";
import { expectClose, poisoned, run } from "./helpers.js";

const c = (value: number): DecodeExpr => ({ op: "const", value });
const i: DecodeExpr = { op: "i" };

/** GGUF Q8_0: f16 scale d at byte 0, then 32 int8 quants; x_i = d · q_i. */
export const Q8_0: PackedFormat = {
  name: "q8_0",
  blockSize: 32,
  bytesPerBlock: 34,
  decode: {
    op: "mul",
    a: { op: "load", type: "f16", offset: c(0) },
    b: { op: "load", type: "i8", offset: { op: "add", a: c(2), b: i } },
  },
};

/** GGUF Q4_0: f16 d, 16 bytes of nibbles; x_j = d·((qs[j]&15)-8), x_{j+16} = d·((qs[j]>>4)-8). */
export const Q4_0: PackedFormat = {
  name: "q4_0",
  blockSize: 32,
  bytesPerBlock: 18,
  decode: {
    op: "let",
    name: "d",
    value: { op: "load", type: "f16", offset: c(0) },
    body: {
      op: "mul",
      a: { op: "var", name: "d" },
      b: {
        op: "sub",
        a: {
          op: "and",
          a: {
            op: "shr",
            a: { op: "load", type: "u8", offset: { op: "add", a: c(2), b: { op: "and", a: i, b: c(15) } } },
            b: { op: "mul", a: { op: "shr", a: i, b: c(4) }, b: c(4) },
          },
          b: c(15),
        },
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

/**
 * Runs the dequant GEMV `s` (y = x · decode(W)ᵀ over `batch` rows of x) on `bytes` — bound as bytes where the kernel
 * declares W as u8 (the CPU kernels), else as u32 words — and checks y against graph-ir's DecodePacked + MatMul in
 * float64, each element within the error its |x|·|w| sum allows.
 */
export function expectDequantGemv(
  s: SynthKernel,
  f: PackedFormat,
  batch: number,
  K: number,
  N: number,
  bytes: Uint8Array,
  x: Float32Array,
): void {
  const y = poisoned(s.kernel, "y", batch * N);
  const W = s.kernel.buffers.find((p) => p.name === "W")?.elem === "u8" ? bytes : toWords(bytes);
  run(s.kernel, {
    grid: [...s.grid],
    buffers: { x, W, y },
    ...(s.subgroupSize === undefined ? {} : { subgroupSize: s.subgroupSize }),
  });
  const g = new Builder();
  const xr = g.const("x", "f32", [batch, K]);
  const wt = g.transpose(g.decodePacked(g.const("w", { packed: f }, [N, K])), [1, 0]);
  g.output("y", g.matmul(xr, wt));
  g.output("s", g.matmul(g.unary("Abs", xr), g.unary("Abs", wt)));
  const o = evaluate(g.build(), { consts: { x, w: bytes } }).outputs;
  expectClose(y as Float32Array, o.y!.data, o.s!.data);
}

/** The first `n` bytes of little-endian u32 words. */
export function fromWords(words: Uint32Array, n: number): Uint8Array {
  return new Uint8Array(words.buffer, words.byteOffset, n).slice();
}

const load = (type: "u8" | "i8" | "u16" | "u32" | "f16" | "bf16" | "f32", offset: DecodeExpr): DecodeExpr => ({
  op: "load",
  type,
  offset,
});
const bin = (
  op: "add" | "sub" | "mul" | "div" | "idiv" | "mod" | "shl" | "shr" | "and" | "or" | "lt",
  a: DecodeExpr,
  b: DecodeExpr,
): DecodeExpr => ({ op, a, b });

/** GGUF Q4_1: f16 d, f16 m, 16 bytes of nibbles; x_j = d·(qs[j]&15) + m, x_{j+16} = d·(qs[j]>>4) + m. */
export const Q4_1: PackedFormat = {
  name: "q4_1",
  blockSize: 32,
  bytesPerBlock: 20,
  decode: bin(
    "add",
    bin(
      "mul",
      load("f16", c(0)),
      bin(
        "and",
        bin("shr", load("u8", bin("add", c(4), bin("and", i, c(15)))), bin("mul", bin("shr", i, c(4)), c(4))),
        c(15),
      ),
    ),
    load("f16", c(2)),
  ),
};

/** GGUF Q5_0: f16 d, u32 qh (unaligned, byte 2), 16 bytes of nibbles; 5-bit q = nibble | bit i of qh << 4; x = d·(q - 16). */
export const Q5_0: PackedFormat = {
  name: "q5_0",
  blockSize: 32,
  bytesPerBlock: 22,
  decode: bin(
    "mul",
    load("f16", c(0)),
    bin(
      "sub",
      bin(
        "or",
        bin(
          "and",
          bin("shr", load("u8", bin("add", c(6), bin("and", i, c(15)))), bin("mul", bin("shr", i, c(4)), c(4))),
          c(15),
        ),
        bin("shl", bin("and", bin("shr", load("u32", c(2)), i), c(1)), c(4)),
      ),
      c(16),
    ),
  ),
};

/**
 * A made-up format exercising the rest of the recipe language: 14-byte blocks of 8 (blocks straddle words), an
 * f32 scale, a bf16 offset, i8 quants, let/var, select/lt, float div, floor idiv and mod.
 */
export const TEST_MIX: PackedFormat = {
  name: "test_mix",
  blockSize: 8,
  bytesPerBlock: 14,
  decode: {
    op: "let",
    name: "sq",
    value: bin("mul", load("f32", c(0)), load("i8", bin("add", c(6), i))),
    body: bin(
      "add",
      {
        op: "select",
        cond: bin("lt", i, c(4)),
        a: { op: "var", name: "sq" },
        b: bin("div", { op: "var", name: "sq" }, c(2)),
      },
      bin("mul", load("bf16", c(4)), bin("sub", bin("mod", i, c(3)), bin("idiv", bin("sub", i, c(5)), c(3)))),
    ),
  },
};

/** Random blocks of TEST_MIX: a modest f32 scale and bf16 offset, random quants. */
export function randomMixBlocks(r: () => number, blocks: number): Uint8Array {
  const bytes = new Uint8Array(blocks * 14);
  const view = new DataView(bytes.buffer);
  for (let b = 0; b < blocks; b++) {
    view.setFloat32(b * 14, (r() * 2 - 1) * 0.01, true);
    view.setUint16(b * 14 + 4, new Uint32Array(new Float32Array([r() - 0.5]).buffer)[0]! >>> 16, true);
    for (let j = 0; j < 8; j++) bytes[b * 14 + 6 + j] = Math.floor(r() * 256);
  }
  return bytes;
}

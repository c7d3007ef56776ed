// Packed weights for the tests of kernelgen's packed kernels over every GGML block format: the production
// descriptors (models' recipes), random blocks with valid f16 scales, ggml-encoded rows from the GGUF fixtures, and
// the oracle's decode by models' ggml-port block decoders (code independent of the recipes kernelgen compiles).
import * as fs from "node:fs";
import * as path from "node:path";
import { arrayClassFor, interpret } from "@poot/kernel-dsl";
import type { InterpretLaunch, Kernel, KernelBuffer } from "@poot/kernel-dsl";
import type { PackedFormat } from "@poot/graph-ir";
import { PACKED_GGML_TYPES, QUANT_FORMATS, decodePacked, ggmlPackedFormat, openGGUF } from "@poot/models";
import type { GGMLTypeName } from "@poot/models";
import { expect } from "vitest";
import { fixture, needFixture } from "@poot/testkit";
export { rng } from "@poot/testkit";

/** Every GGML block type models keeps packed in traced graphs (so kernelgen receives its descriptor). */
export const TYPES: readonly GGMLTypeName[] = PACKED_GGML_TYPES;

/** The descriptor kernelgen compiles for `t` (the one traced graphs carry). */
export function descriptor(t: GGMLTypeName): PackedFormat {
  const f = ggmlPackedFormat(t);
  if (f === null) throw new Error(`${t} has no packed descriptor`);
  return f;
}

/** The oracle's f32 values of `bytes` (whole blocks of `t`), by models' ggml-port decoder, not by the descriptor. */
export function decodeIndependently(t: GGMLTypeName, bytes: Uint8Array): Float32Array {
  return decodePacked(QUANT_FORMATS[t], bytes);
}

/** n uniform f32 values in [-1, 1). */
export function randF32(r: () => number, n: number): Float32Array {
  return Float32Array.from({ length: n }, () => r() * 2 - 1);
}

/**
 * `blocks` random blocks of `t`: every byte random (so every quant, sub-block scale and high-bit pattern occurs),
 * except that each f16 field (d, dmin, m) is kept finite and below 2 in magnitude, of either sign.
 */
export function randomBlocks(r: () => number, t: GGMLTypeName, blocks: number): Uint8Array {
  const q = QUANT_FORMATS[t];
  const bytes = Uint8Array.from({ length: blocks * q.blockBytes }, () => Math.floor(r() * 256));
  for (let b = 0; b < blocks; b++) {
    for (const f of q.fields)
      if (f.kind === "f16") for (let k = 0; k < f.count; k++) bytes[b * q.blockBytes + f.offset + 2 * k + 1]! &= 0xbf;
    // MXFP4's E8M0 exponent byte: scales 2^-10 .. 2^5, so sums of products stay far from overflow and subnormals.
    for (const f of q.fields)
      if (f.name === "e" && f.kind === "u8")
        bytes[b * q.blockBytes + f.offset] = 118 + (bytes[b * q.blockBytes + f.offset]! & 15);
  }
  return bytes;
}

/** The fixtures folder, or undefined when fixtures/gguf is missing (outside CI only: CI fails instead). */
export const FIXTURES: string | undefined = needFixture("gguf") === undefined ? fixture() : undefined;

// GGUF files whose tensors were written by ggml's own quantizers: Q4_K and Q6_K (llama3-w256), Q5_0, Q5_1, Q8_0 (olmoe).
const GGUFS = [
  ["llama3-w256", "model-Q4_K_M.gguf"],
  ["olmoe", "model-Q4_K_M.gguf"],
] as const;

/** The repo's files quantized by llama.cpp's llama_model_quantize (fixtures/gguf/formats): every format of issue #26. */
export const FORMAT_GGUFS: string = fixture("gguf", "formats");

/**
 * A ggml-encoded [rows, K] slice of a fixture tensor of type `t` (its first rows; of a 3-D expert stack, the first
 * expert's), or undefined when none exists. Looks in the shared fixture files first, then in fixtures/gguf/formats.
 */
export function fixtureRows(
  t: GGMLTypeName,
  rows: number,
): { readonly name: string; readonly K: number; readonly bytes: Uint8Array } | undefined {
  const files = [
    ...(FIXTURES === undefined ? [] : GGUFS.map(([fam, file]) => path.join(FIXTURES!, "gguf", fam, file))),
    ...fs
      .readdirSync(FORMAT_GGUFS)
      .filter((f) => f.endsWith(".gguf"))
      .sort()
      .map((f) => path.join(FORMAT_GGUFS, f)),
  ];
  for (const file of files) {
    const g = openGGUF(file);
    try {
      const info = g.tensors().find((x) => x.dtype === t && x.shape.length >= 2 && (x.shape.at(-2) as number) >= rows);
      if (info === undefined) continue;
      const K = info.shape[1] as number;
      const rowBytes = (K / QUANT_FORMATS[t].blockElems) * QUANT_FORMATS[t].blockBytes;
      return { name: `${path.basename(file)}:${info.name}`, K, bytes: g.readSync(info.name).slice(0, rows * rowBytes) };
    } finally {
      g.close();
    }
  }
  return undefined;
}

/** Bytes as little-endian u32 words, zero-padded to whole words (how non-CPU kernels bind packed data). */
export function toWords(bytes: Uint8Array): Uint32Array {
  const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
  padded.set(bytes);
  return new Uint32Array(padded.buffer);
}

/** Buffer `name` of `kernel` allocated with `n` elements and poisoned (NaN floats, 0xdeadbeef words, 0xa5 bytes). */
export function poisoned(kernel: Kernel, name: string, n: number): KernelBuffer {
  const p = kernel.buffers.find((b) => b.name === name);
  if (p === undefined) throw new Error(`no buffer ${name} in ${kernel.name}`);
  const a = arrayClassFor(p.elem).make(n);
  if (a instanceof Float32Array) a.fill(NaN);
  else if (a instanceof Uint32Array) a.fill(0xdeadbeef);
  else if (a instanceof Uint16Array) a.fill(0x7fc1);
  else a.fill(0xa5);
  return a;
}

/** Runs `kernel` in the kernel-dsl interpreter (workgroups, shared memory, barriers and subgroups simulated). */
export function run(kernel: Kernel, launch: InterpretLaunch): void {
  interpret(kernel, launch);
}

/** Expects |actual − expected| ≤ rel · scale (elementwise), naming the worst element; NaN (an unwritten element) fails. */
export function expectClose(
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  scale: ArrayLike<number>,
  rel: number,
): void {
  expect(actual.length).toBe(expected.length);
  let worst = -1,
    worstErr = 0;
  for (let i = 0; i < expected.length; i++) {
    const err = Math.abs((actual[i] as number) - (expected[i] as number)) / (rel * (scale[i] as number) + 1e-30);
    if (!(err <= 1) && (worst < 0 || !(err <= worstErr))) [worst, worstErr] = [i, err];
  }
  if (worst >= 0)
    expect.fail(
      `element ${worst}: got ${actual[worst]}, expected ${expected[worst]} (tolerance ${rel * (scale[worst] as number)})`,
    );
}

/** Expects element-by-element equality (the same f32 values), reporting the first mismatch. */
export function expectExact(actual: ArrayLike<number>, expected: ArrayLike<number>): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++)
    if (!Object.is(actual[i], expected[i])) expect.fail(`element ${i}: got ${actual[i]}, expected ${expected[i]}`);
}

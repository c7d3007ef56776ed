// Seeded mutation fuzzing of both header parsers: every mutated input must parse or raise a ModelError;
// no other exception, no hang (bounded run time), no huge allocation (heap growth checked).
import * as fs from "node:fs";
import { expect, test } from "vitest";
import {
  GGUFCheckpoint,
  MemorySource,
  ModelError,
  QUANT_FORMATS,
  encodeGGUFHeader,
  parseGGUFHeader,
  parseSafetensorsHeader,
} from "@poot/models";
import { fixture, needFixture } from "@poot/testkit";
import { fuzz, rng } from "./fuzz-kit.js";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("gguf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

function smallGGUF(): Uint8Array {
  const enc = encodeGGUFHeader(
    {
      "general.architecture": { type: "string", value: "llama" },
      "general.alignment": { type: "u32", value: 32 },
      "llama.block_count": { type: "u32", value: 2 },
      "llama.rope.freq_base": { type: "f32", value: 10000 },
      "tokenizer.ggml.tokens": { type: "array", elem: "string", value: ["<s>", "a", "b", "ab"] },
      "tokenizer.ggml.scores": { type: "array", elem: "f32", value: [0, -1, -2, -3] },
      "x.nested": { type: "array", elem: "i64", value: [1n, -2n] },
      "x.flag": { type: "bool", value: false },
    },
    [
      { name: "a", ggmlDims: [32, 2], format: QUANT_FORMATS.Q4_0 },
      { name: "b", ggmlDims: [256], format: QUANT_FORMATS.Q6_K },
      { name: "c", ggmlDims: [4, 2, 1], format: QUANT_FORMATS.F16 },
    ],
  );
  const out = new Uint8Array(enc.header.length + enc.dataLength);
  out.set(enc.header);
  return out;
}

function smallSafetensors(): Uint8Array {
  const json = new TextEncoder().encode(
    JSON.stringify({
      __metadata__: { format: "pt" },
      a: { dtype: "F32", shape: [2, 2], data_offsets: [0, 16] },
      b: { dtype: "BF16", shape: [3], data_offsets: [16, 22] },
      c: { dtype: "I8", shape: [2], data_offsets: [22, 24] },
    }),
  );
  const out = new Uint8Array(8 + json.length + 24);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  return out;
}

test("GGUF header parser: 100,000 mutated inputs raise only ModelErrors", () => {
  const seeds = [smallGGUF()];
  if (FIXTURES) {
    // The real fixture header (vocab, merges, tensor directory) without most of its data.
    const full = fs.readFileSync(fixture("gguf", "qwen3", "model-Q8_0.gguf"));
    const h = parseGGUFHeader(new MemorySource(new Uint8Array(full)));
    seeds.push(new Uint8Array(full.subarray(0, h.dataOffset + 64)));
  }
  expect(() => parseGGUFHeader(new MemorySource(seeds[0]!))).not.toThrow();
  const t0 = performance.now();
  const res = fuzz(seeds, 100_000, 1234, (s) => parseGGUFHeader(s));
  const ms = performance.now() - t0;
  console.log(`GGUF fuzz: ${res.ok} parsed, ${res.typed} typed errors in ${ms.toFixed(0)} ms`);
  expect(res.ok + res.typed).toBe(100_000);
  expect(res.typed).toBeGreaterThan(10_000);
}, 60_000);

test("safetensors header parser: 100,000 mutated inputs raise only ModelErrors", () => {
  const seeds = [smallSafetensors()];
  expect(() => parseSafetensorsHeader(new MemorySource(seeds[0]!))).not.toThrow();
  const t0 = performance.now();
  const res = fuzz(seeds, 100_000, 5678, (s) => parseSafetensorsHeader(s));
  const ms = performance.now() - t0;
  console.log(`safetensors fuzz: ${res.ok} parsed, ${res.typed} typed errors in ${ms.toFixed(0)} ms`);
  expect(res.ok + res.typed).toBe(100_000);
  expect(res.typed).toBeGreaterThan(10_000);
}, 60_000);

/** A whole GGUF (header and random tensor data) holding one tensor of each format issue #26 added. */
function formatsGGUF(): Uint8Array {
  const enc = encodeGGUFHeader(
    { "general.architecture": { type: "string", value: "llama" }, "general.alignment": { type: "u32", value: 32 } },
    [
      { name: "nl", ggmlDims: [64, 2], format: QUANT_FORMATS.IQ4_NL },
      { name: "xs", ggmlDims: [256, 1], format: QUANT_FORMATS.IQ4_XS },
      { name: "mx", ggmlDims: [32, 2, 2], format: QUANT_FORMATS.MXFP4 },
      { name: "q4", ggmlDims: [32, 1], format: QUANT_FORMATS.Q4_0 },
      { name: "k5", ggmlDims: [256, 1], format: QUANT_FORMATS.Q5_K },
    ],
  );
  const out = new Uint8Array(enc.header.length + enc.dataLength);
  out.set(enc.header);
  const r = rng(99);
  for (let i = enc.header.length; i < out.length; i++) out[i] = Math.floor(r() * 256);
  return out;
}

test("GGUF files with IQ4_NL / IQ4_XS / MXFP4 / Q4_0 / Q5_K tensors: 100,000 mutated files open and decode or raise ModelErrors", () => {
  const seed = formatsGGUF();
  const open = (s: MemorySource): number => {
    const g = new GGUFCheckpoint(s);
    let n = 0;
    for (const t of g.tensors()) n += g.readF32Sync(t.name).length;
    return n;
  };
  expect(open(new MemorySource(seed))).toBe(64 * 2 + 256 + 32 * 4 + 32 + 256);
  const t0 = performance.now();
  const res = fuzz([seed], 100_000, 2626, open);
  console.log(
    `GGUF formats fuzz: ${res.ok} opened and decoded, ${res.typed} typed errors in ${(performance.now() - t0).toFixed(0)} ms`,
  );
  expect(res.ok + res.typed).toBe(100_000);
  expect(res.typed).toBeGreaterThan(10_000);
  expect(res.ok).toBeGreaterThan(10_000);
}, 120_000);

test("planted: a decoder that throws a plain Error on a format's bytes fails the formats fuzz gate", () => {
  const seed = formatsGGUF();
  const bad = (s: MemorySource): void => {
    const g = new GGUFCheckpoint(s);
    for (const t of g.tensors())
      if (t.dtype === "MXFP4" && g.readF32Sync(t.name).some((x) => x === 0)) throw new Error("planted");
  };
  expect(() => fuzz([seed], 2_000, 2627, bad)).toThrow(/non-ModelError/);
});

// Seeded fuzzing of the HF quantization parsers (issue #26): 100,000 mutated quantization_config objects, and
// 100,000 mutated GPTQ / AWQ / FP8 safetensors files opened under random configs and fully decoded, and 100,000
// mutated FP8 W8A8-static files opened with their input scales. Every input
// must succeed or raise a ModelError naming what and where; nothing else, no hang, bounded heap.
import { expect, test } from "vitest";
import {
  MemorySource,
  ModelError,
  QuantizedHFCheckpoint,
  parseHFQuantConfig,
  safetensorsFromBytes,
  type HFQuantConfig,
} from "@poot/models";
import { fuzz, rng } from "./fuzz-kit.js";

/** A safetensors file of the given tensors (raw little-endian bytes). */
function st(tensors: Record<string, { dtype: string; shape: number[]; bytes: Uint8Array }>): Uint8Array {
  const header: Record<string, unknown> = {};
  let off = 0;
  for (const [k, t] of Object.entries(tensors)) {
    header[k] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + t.bytes.length] };
    off += t.bytes.length;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + off);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let at = 8 + json.length;
  for (const t of Object.values(tensors)) {
    out.set(t.bytes, at);
    at += t.bytes.length;
  }
  return out;
}

const r0 = rng(2601);
const bytes = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(r0() * 256));
// f16 / bf16 scales in [0.25, 1): exponent bits fixed, mantissa random.
const halfs = (n: number, hi: number) => {
  const b = bytes(2 * n);
  for (let i = 1; i < b.length; i += 2) b[i] = hi;
  return b;
};
const gidx = Uint8Array.from(new Uint8Array(Int32Array.from({ length: 64 }, (_, i) => (i * 7) % 2).buffer));

/** out 16, in 64: GPTQ with act-order g_idx (group 32), AWQ (group 32), FP8 with block scales [8, 32]. */
const SEEDS = [
  st({
    "l.qweight": { dtype: "I32", shape: [8, 16], bytes: bytes(8 * 16 * 4) },
    "l.qzeros": { dtype: "I32", shape: [2, 2], bytes: bytes(16) },
    "l.scales": { dtype: "F16", shape: [2, 16], bytes: halfs(32, 0x34) },
    "l.g_idx": { dtype: "I32", shape: [64], bytes: gidx },
  }),
  st({
    "l.qweight": { dtype: "I32", shape: [64, 2], bytes: bytes(64 * 2 * 4) },
    "l.qzeros": { dtype: "I32", shape: [2, 2], bytes: bytes(16) },
    "l.scales": { dtype: "BF16", shape: [2, 16], bytes: halfs(32, 0x3e) },
  }),
  st({
    "l.weight": { dtype: "F8_E4M3", shape: [16, 64], bytes: bytes(16 * 64).map((b) => b & 0xf7) },
    "l.weight_scale_inv": { dtype: "F32", shape: [2, 2], bytes: new Uint8Array(Float32Array.of(1, 0.5, 2, 3).buffer) },
  }),
];
const CONFIGS: HFQuantConfig[] = [
  parseHFQuantConfig({ quant_method: "gptq", bits: 4, group_size: 32, desc_act: true, sym: false }, "c")!,
  parseHFQuantConfig({ quant_method: "gptq", bits: 4, group_size: -1, checkpoint_format: "gptq_v2" }, "c")!,
  parseHFQuantConfig({ quant_method: "awq", bits: 4, group_size: 32 }, "c")!,
  parseHFQuantConfig({ quant_method: "fp8", weight_block_size: [8, 32] }, "c")!,
  parseHFQuantConfig({ quant_method: "fp8" }, "c")!,
];

test("every seed file opens and decodes under its own config", () => {
  for (const [i, c] of [0, 2, 3].entries()) {
    const ck = new QuantizedHFCheckpoint(safetensorsFromBytes(SEEDS[i]!), CONFIGS[c]!);
    expect(ck.readF32Sync("l.weight").length).toBe(16 * 64);
  }
});

test("GPTQ / AWQ / FP8 safetensors: 100,000 mutated files under random configs open and decode or raise ModelErrors", () => {
  const pick = rng(77);
  let seedIdx = 0;
  const open = (s: MemorySource): number => {
    const ck = new QuantizedHFCheckpoint(
      safetensorsFromBytes(s.readSync(0, s.size), s.label),
      CONFIGS[Math.floor(pick() * CONFIGS.length)]!,
    );
    let n = 0;
    for (const t of ck.tensors()) if (/^(int4|fp8)/.test(t.dtype)) n += ck.readF32Sync(t.name).length;
    return n;
  };
  const t0 = performance.now();
  // fuzz() takes the first seed for 9 inputs in 10 and the last for the tenth: rotate the seeds across three runs.
  let ok = 0,
    typed = 0;
  for (const [k, n] of [40_000, 30_000, 30_000].entries()) {
    seedIdx = k;
    const res = fuzz([SEEDS[seedIdx]!], n, 2602 + k, open);
    ok += res.ok;
    typed += res.typed;
  }
  console.log(
    `HF quant fuzz: ${ok} opened and decoded, ${typed} typed errors in ${(performance.now() - t0).toFixed(0)} ms`,
  );
  expect(ok + typed).toBe(100_000);
  expect(ok).toBeGreaterThan(10_000);
  expect(typed).toBeGreaterThan(10_000);
}, 300_000);

// FP8 W8A8 static (decision 2610): channel scales and a per-tensor input_scale, opened with activations fp8-static,
// so the input_scale reader (dtype, shape, finite positive value) and the activation scheme both see mutated bytes.
const STATIC_SEED = st({
  "l.input_scale": { dtype: "F32", shape: [1], bytes: new Uint8Array(Float32Array.of(0.05).buffer) },
  "l.weight": { dtype: "F8_E4M3", shape: [16, 64], bytes: bytes(16 * 64).map((b) => b & 0xf7) },
  "l.weight_scale": { dtype: "BF16", shape: [16, 1], bytes: halfs(16, 0x3c) },
});
const STATIC_CONFIGS: HFQuantConfig[] = [
  parseHFQuantConfig(
    {
      quant_method: "compressed-tensors",
      config_groups: {
        g: {
          weights: { type: "float", num_bits: 8, strategy: "channel" },
          input_activations: { type: "float", num_bits: 8, strategy: "tensor", dynamic: false },
        },
      },
    },
    "c",
  )!,
  parseHFQuantConfig({ quant_method: "fp8", activation_scheme: "static" }, "c")!,
  parseHFQuantConfig({ quant_method: "fp8", weight_block_size: [8, 32] }, "c")!,
  parseHFQuantConfig({ quant_method: "fp8", activation_scheme: "dynamic", weight_block_size: [16, 32] }, "c")!,
];

test("FP8 activations: 100,000 mutated W8A8 files opened with fp8-static or fp8-dynamic decode or raise ModelErrors", () => {
  const pick = rng(2610);
  const open = (s: MemorySource): number => {
    const cfg = STATIC_CONFIGS[Math.floor(pick() * STATIC_CONFIGS.length)]!;
    const activations = cfg.method === "fp8" && cfg.activations === "dynamic" ? "fp8-dynamic" : "fp8-static";
    const ck = new QuantizedHFCheckpoint(safetensorsFromBytes(s.readSync(0, s.size), s.label), cfg, { activations });
    let n = 0;
    for (const t of ck.tensors())
      if (t.dtype === "fp8e4m3") {
        const ok =
          activations === "fp8-static" ? t.inputScale! > 0 && Number.isFinite(t.inputScale) : t.inputGroup! > 0;
        if (!ok) throw new Error(`input quantization ${t.inputScale} ${t.inputGroup}`);
        n += ck.readF32Sync(t.name).length;
      }
    return n;
  };
  expect(open(new MemorySource(STATIC_SEED, "seed"))).toBe(16 * 64);
  const t0 = performance.now();
  const res = fuzz([STATIC_SEED], 100_000, 2611, open);
  console.log(
    `FP8 activations fuzz: ${res.ok} opened and decoded, ${res.typed} typed errors in ${(performance.now() - t0).toFixed(0)} ms`,
  );
  expect(res.ok + res.typed).toBe(100_000);
  expect(res.ok).toBeGreaterThan(10_000);
  expect(res.typed).toBeGreaterThan(10_000);
}, 300_000);

// Structured mutations of quantization_config: each key of a valid config replaced, dropped or added at random.
const KEYS = [
  "quant_method",
  "bits",
  "w_bit",
  "group_size",
  "q_group_size",
  "desc_act",
  "sym",
  "checkpoint_format",
  "version",
  "zero_point",
  "fmt",
  "weight_block_size",
  "config_groups",
  "activation_scheme",
];
const VALUES: unknown[] = [
  undefined,
  null,
  -1,
  0,
  1,
  4,
  8,
  32,
  48,
  64,
  128,
  2 ** 53,
  -(2 ** 31),
  1.5,
  "4",
  "",
  "gptq",
  "awq",
  "fp8",
  "gemm",
  "GEMV",
  "e4m3",
  "gptq_v2",
  "compressed-tensors",
  true,
  false,
  [],
  [128],
  [128, 128],
  [0, 128],
  [1e9, 1],
  {},
  { g: { weights: { type: "float", num_bits: 8, strategy: "block", block_structure: [64, 64] } } },
  { g: { weights: { type: "int", num_bits: 4, strategy: "group" } } },
  { g: null },
  { g: { weights: [] } },
  "static",
  "dynamic",
  { g: { weights: { type: "float", num_bits: 8, strategy: "tensor" }, input_activations: null } },
  { g: { weights: { type: "float", num_bits: 8, strategy: "tensor" }, input_activations: [] } },
  {
    g: {
      weights: { type: "float", num_bits: 8, strategy: "channel" },
      input_activations: { type: "float", num_bits: 8, strategy: "tensor", dynamic: false },
    },
  },
  { g: { weights: { type: "float", num_bits: 8 }, input_activations: { type: "float", num_bits: 8, dynamic: true } } },
  { g: { weights: { type: "float", num_bits: 8 }, input_activations: { type: "int", num_bits: 8, dynamic: "x" } } },
  { g: { weights: { type: "float", num_bits: 8 }, input_activations: { type: "float", num_bits: 8, strategy: 3 } } },
];
const BASES: unknown[] = [
  { quant_method: "gptq", bits: 4, group_size: 128, desc_act: true, sym: true },
  { quant_method: "awq", bits: 4, group_size: 128, version: "gemm", zero_point: true },
  { quant_method: "fp8", fmt: "e4m3", weight_block_size: [128, 128] },
  { quant_method: "compressed-tensors", config_groups: VALUES[32] },
  { bits: 4, group_size: 128 },
  { quant_method: "compressed-tensors", config_groups: VALUES[40] },
  { quant_method: "fp8", activation_scheme: "static" },
];

test("quantization_config: 100,000 structurally mutated configs parse or raise ModelErrors naming a key", () => {
  const r = rng(2603);
  const any = (): unknown => VALUES[Math.floor(r() * VALUES.length)];
  let ok = 0,
    typed = 0;
  for (let i = 0; i < 100_000; i++) {
    const base = BASES[i % BASES.length] as Record<string, unknown>;
    const raw: unknown =
      r() < 0.05
        ? any()
        : {
            ...base,
            ...Object.fromEntries(
              Array.from({ length: 1 + Math.floor(r() * 3) }, () => [KEYS[Math.floor(r() * KEYS.length)]!, any()]),
            ),
          };
    try {
      parseHFQuantConfig(raw, `fuzz#${i}`);
      ok++;
    } catch (e) {
      if (!(e instanceof ModelError)) throw new Error(`config #${i} raised a non-ModelError: ${String(e)}`);
      if (!e.key?.startsWith("quantization_config.")) throw new Error(`config #${i}: error names no key: ${e.message}`);
      typed++;
    }
  }
  console.log(`quantization_config fuzz: ${ok} parsed, ${typed} typed errors`);
  expect(ok).toBeGreaterThan(10_000);
  expect(typed).toBeGreaterThan(10_000);
}, 120_000);

test("planted: a decode that throws a plain Error fails the HF quant fuzz gate", () => {
  const bad = (s: MemorySource): void => {
    const ck = new QuantizedHFCheckpoint(safetensorsFromBytes(s.readSync(0, s.size)), CONFIGS[0]!);
    if (ck.readF32Sync("l.weight").some((x) => x < 0)) throw new Error("planted");
  };
  expect(() => fuzz([SEEDS[0]!], 2_000, 2604, bad)).toThrow(/non-ModelError/);
});

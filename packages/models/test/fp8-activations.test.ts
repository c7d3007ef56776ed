// FP8 static activation scales (decision 2610) on fixtures/hf/llama3-fp8-static: a compressed-tensors W8A8-static
// checkpoint written by Hugging Face's safetensors with ml_dtypes' e4m3 bytes (tools/hf-quant/make_fp8_static.py).
// Oracles: ml_dtypes' float8_e4m3fn rounding table, and that tool's float64 numpy forward (checked against
// transformers' float64 logits of hf/llama3) with activations exact and with each linear's input quantized as vLLM's
// static path does; and llama3-fp8 (transformers' fine-grained FP8, dynamic activations) against make_fp8_dynamic.py's
// forward with per-64-group dynamic scales. Planted: a wrong input scale, a biased rounding, activations left exact,
// per-token instead of per-group dynamic scales.
import * as fs from "node:fs";
import { Builder, evaluate } from "@poot/graph-ir";
import {
  ConfigError,
  LoadedModel,
  ModelError,
  QuantizedHFCheckpoint,
  UnsupportedTensorTypeError,
  fp8StaticQuantize,
  openCheckpoint,
  openSafetensors,
  parseHFQuantConfig,
  readHFConfig,
  type Checkpoint,
  type TensorInfo,
} from "@poot/models";
import { fixture, relErr } from "@poot/testkit";
import { describe, expect, test } from "vitest";

const dir = fixture("hf", "llama3-fp8-static");
const ref = JSON.parse(fs.readFileSync(fixture("hf", "llama3-fp8-static", "reference.json"), "utf8")) as {
  prompt_ids: number[];
  greedy_ids: number[];
  static_greedy_ids: number[];
  input_scale: Record<string, number>;
};
const refLogits = (name: string) =>
  openSafetensors(fixture("hf", "llama3-fp8-static", "reference.safetensors")).readF32Sync(name);

/** fp8StaticQuantize(x, scale) evaluated by the reference evaluator. */
function quantizeEval(x: Float32Array, scale: number, build = fp8StaticQuantize): Float64Array {
  const b = new Builder();
  const input = b.slot("Token", "x", "f32", [x.length]);
  b.output("y", build(b, input, scale));
  return evaluate(b.build(), { slots: { x } }).outputs.y!.data as Float64Array;
}

describe("FP8 e4m3 activation rounding against ml_dtypes' float8_e4m3fn", () => {
  const table = openSafetensors(fixture("hf", "llama3-fp8-static", "e4m3-rounding.safetensors"));
  const x = table.readF32Sync("x"),
    expected = table.readF32Sync("expected");

  test("every finite e4m3 value, every tie and its float32 neighbours, saturation, random values: bit-equal", () => {
    const got = quantizeEval(x, 1);
    const wrong = [...expected.keys()].filter((i) => got[i] !== expected[i]);
    expect(x.length).toBeGreaterThan(3000);
    expect(wrong.map((i) => `${x[i]} -> ${got[i]}, expected ${expected[i]}`)).toEqual([]);
    // With a scale s: e4m3(x / s) · s; x·s in, expected·s out (a power of two keeps the table exact).
    const scaled = quantizeEval(
      x.map((v) => v * 0.25),
      0.25,
    );
    expect([...scaled.keys()].filter((i) => scaled[i] !== expected[i]! * 0.25)).toEqual([]);
  });

  test("planted: a rounding biased toward zero (x·(1 − 2⁻⁵) first) disagrees with the table", () => {
    const biased: typeof fp8StaticQuantize = (b, v, s) => fp8StaticQuantize(b, b.mul(v, 1 - 2 ** -5), s);
    const got = quantizeEval(x, 1, biased);
    expect(got.filter((v, i) => v !== expected[i]).length).toBeGreaterThan(100);
  });
});

describe("quantization_config: the activation scheme", () => {
  const ct = (input_activations: unknown) => ({
    quant_method: "compressed-tensors",
    config_groups: {
      g: { weights: { type: "float", num_bits: 8, strategy: "channel" }, input_activations },
    },
  });
  test("static, dynamic and weight-only schemes of compressed-tensors and fp8 configs", () => {
    const at = (raw: unknown) => (parseHFQuantConfig(raw, "c.json") as { activations: string }).activations;
    expect(at(ct({ type: "float", num_bits: 8, strategy: "tensor", dynamic: false }))).toBe("static");
    expect(at(ct({ type: "float", num_bits: 8, strategy: "token", dynamic: true }))).toBe("dynamic");
    expect(at(ct(null))).toBe("none");
    expect(at({ quant_method: "fp8", activation_scheme: "static" })).toBe("static");
    expect(at({ quant_method: "fp8" })).toBe("dynamic");
    expect(
      at(JSON.parse(fs.readFileSync(fixture("hf", "llama3-fp8-static", "config.json"), "utf8")).quantization_config),
    ).toBe("static");
  });
  test("unsupported activation settings are typed errors naming the key", () => {
    expect(() => parseHFQuantConfig({ quant_method: "fp8", activation_scheme: "sometimes" }, "c.json")).toThrow(
      /activation_scheme/,
    );
    expect(() => parseHFQuantConfig(ct({ type: "int", num_bits: 8, dynamic: false }), "c.json")).toThrow(
      UnsupportedTensorTypeError,
    );
    expect(() =>
      parseHFQuantConfig(ct({ type: "float", num_bits: 8, strategy: "channel", dynamic: false }), "c.json"),
    ).toThrow(/input_activations\.strategy/);
    expect(() => parseHFQuantConfig(ct({ type: "float", num_bits: 8, dynamic: "no" }), "c.json")).toThrow(ConfigError);
  });
});

describe("fixtures/hf/llama3-fp8-static", () => {
  test("default (activations f32): input_scale is read by nobody; logits of the exact-activation forward", () => {
    const ck = openCheckpoint(dir);
    expect(ck).toBeInstanceOf(QuantizedHFCheckpoint);
    expect(ck.tensors().some((t) => t.name.endsWith("input_scale") || t.inputScale !== undefined)).toBe(false);
    ck.close();
    const m = LoadedModel.open(dir);
    try {
      const rel = relErr(m.logits(ref.prompt_ids), refLogits("prompt_logits"));
      console.log(`fp8-static, activations f32: eval rel ${rel.toExponential(2)}`);
      expect(rel).toBeLessThanOrEqual(1e-4);
      expect(m.generate(ref.prompt_ids, 16).ids).toEqual(ref.greedy_ids);
    } finally {
      m.close();
    }
  });

  test("activations fp8-static: the checkpoint's input scales; logits of the static-FP8 forward, 16 greedy ids", () => {
    const ck = openCheckpoint(dir, { activations: "fp8-static" });
    for (const [name, s] of Object.entries(ref.input_scale)) expect(ck.info(name).inputScale).toBe(s);
    ck.close();
    const m = LoadedModel.open(dir, { activations: "fp8-static" });
    try {
      const logits = m.logits(ref.prompt_ids);
      const rel = relErr(logits, refLogits("static_prompt_logits"));
      const vsExact = relErr(logits, refLogits("prompt_logits"));
      console.log(
        `fp8-static: eval rel ${rel.toExponential(2)} (vs the exact-activation forward ${vsExact.toFixed(3)})`,
      );
      expect(rel).toBeLessThanOrEqual(1e-4);
      // Planted: the same logits against the exact-activation reference are far outside the bound.
      expect(vsExact).toBeGreaterThan(1e-2);
      expect(m.generate(ref.prompt_ids, 16).ids).toEqual(ref.static_greedy_ids);
    } finally {
      m.close();
    }
  });

  test("planted: input scales doubled fail the 1e-4 bound", () => {
    const ck = openCheckpoint(dir, { activations: "fp8-static" });
    const m = LoadedModel.fromCheckpoint(readHFConfig(dir), withScales(ck, 2));
    try {
      expect(relErr(m.logits(ref.prompt_ids), refLogits("static_prompt_logits"))).toBeGreaterThan(1e-2);
    } finally {
      m.close();
    }
  });

  test("fp8-static on a checkpoint without static scales is an error naming what is missing", () => {
    expect(() => openCheckpoint(fixture("hf", "llama3-fp8"), { activations: "fp8-static" })).toThrow(
      /input_scale.*activations fp8-static|activations fp8-static.*input_scale/,
    );
    expect(() => openCheckpoint(fixture("hf", "llama3-gptq"), { activations: "fp8-static" })).toThrow(ConfigError);
    expect(() => openCheckpoint(fixture("hf", "llama3"), { activations: "fp8-static" })).toThrow(ConfigError);
    expect(() => openCheckpoint(fixture("hf", "llama3-fp8"), { activations: "fp8-static" })).toThrow(ModelError);
  });
});

describe("fixtures/hf/llama3-fp8 (activation_scheme dynamic, weight blocks [32, 64]) with activations fp8-dynamic", () => {
  const fp8 = fixture("hf", "llama3-fp8");
  const dyn = JSON.parse(fs.readFileSync(fixture("hf", "llama3-fp8", "reference-dynamic.json"), "utf8")) as {
    prompt_ids: number[];
    dynamic_greedy_ids: number[];
    group_size: number;
  };
  const want = () =>
    openSafetensors(fixture("hf", "llama3-fp8", "reference-dynamic.safetensors")).readF32Sync("dynamic_prompt_logits");

  test("groups of 64 inputs (weight_block_size[1]); logits of transformers' dynamic FP8 forward, 16 greedy ids", () => {
    const ck = openCheckpoint(fp8, { activations: "fp8-dynamic" });
    expect(ck.info("model.layers.0.mlp.down_proj.weight").inputGroup).toBe(dyn.group_size);
    ck.close();
    const m = LoadedModel.open(fp8, { activations: "fp8-dynamic" });
    try {
      const logits = m.logits(dyn.prompt_ids);
      const rel = relErr(logits, want());
      console.log(`fp8-dynamic: eval rel ${rel.toExponential(2)}`);
      expect(rel).toBeLessThanOrEqual(1e-4);
      expect(m.generate(dyn.prompt_ids, 16).ids).toEqual(dyn.dynamic_greedy_ids);
    } finally {
      m.close();
    }
  });

  test("planted: one scale per token instead of per 64-group (down_proj has 128 inputs) fails the bound", () => {
    const ck = openCheckpoint(fp8, { activations: "fp8-dynamic" });
    const list = ck
      .tensors()
      .map((t): TensorInfo => (t.inputGroup === undefined ? t : { ...t, inputGroup: t.shape[1]! }));
    const byName = new Map(list.map((t) => [t.name, t]));
    const perToken = Object.assign(Object.create(ck) as Checkpoint, {
      tensors: () => list,
      info: (n: string) => byName.get(n)!,
    });
    const m = LoadedModel.fromCheckpoint(readHFConfig(fp8), perToken);
    try {
      expect(relErr(m.logits(dyn.prompt_ids), want())).toBeGreaterThan(1e-4);
    } finally {
      m.close();
    }
  });

  test("fp8-dynamic on a checkpoint made for static or no activation quantization is a ConfigError", () => {
    expect(() => openCheckpoint(dir, { activations: "fp8-dynamic" })).toThrow(/fp8-dynamic.*scheme is static/);
    expect(() => openCheckpoint(fixture("hf", "llama3-awq"), { activations: "fp8-dynamic" })).toThrow(ConfigError);
  });
});

/** The checkpoint with every input scale multiplied by `k` (a planted wrong scale). */
function withScales(ck: Checkpoint, k: number): Checkpoint {
  const list = ck
    .tensors()
    .map((t): TensorInfo => (t.inputScale === undefined ? t : { ...t, inputScale: t.inputScale * k }));
  const byName = new Map(list.map((t) => [t.name, t]));
  return Object.assign(Object.create(ck) as Checkpoint, { tensors: () => list, info: (n: string) => byName.get(n)! });
}

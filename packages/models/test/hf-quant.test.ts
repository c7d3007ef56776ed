// GPTQ (v1 zeros, act-order g_idx), AutoAWQ GEMM and FP8 e4m3 (tensor, channel and block scales) checkpoints of the
// llama3 fixture (fixtures/hf/llama3-*, made by tools/hf-quant): weights open packed, every weight decodes to the
// float64 dequantization of the published layouts (sha256 recorded by the tool), the eval forward is within 1e-4 of
// the tool's float64 forward and its 16 greedy ids equal that forward's. Planted: a wrong nibble order or zero offset.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import { describe, expect, test } from "vitest";
import {
  AWQ_GEMM_LAYOUT,
  LoadedModel,
  ModelError,
  QuantizedHFCheckpoint,
  openCheckpoint,
  openSafetensors,
  parseHFQuantConfig,
  readHFQuantConfig,
  type HFQuantConfig,
} from "@poot/models";
import { fixture } from "@poot/testkit";

interface Reference {
  prompt_ids: number[];
  greedy_ids: number[];
  dequant_sha256: Record<string, string>;
}

const VARIANTS = { "llama3-gptq": /^int4zpx?_f16$/, "llama3-awq": /^int4zp_f16$/, "llama3-fp8": /^fp8e4m3$/ };

function relErr(a: ArrayLike<number>, ref: ArrayLike<number>): number {
  expect(a.length).toBe(ref.length);
  let d = 0,
    m = 0;
  for (let i = 0; i < ref.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - ref[i]!));
    m = Math.max(m, Math.abs(ref[i]!));
  }
  return d / m;
}

const sha = (x: Float32Array) =>
  crypto
    .createHash("sha256")
    .update(new Uint8Array(x.buffer, x.byteOffset, x.byteLength))
    .digest("hex");

/** Names of the weights whose decode differs from the tool's float64 dequantization. */
function mismatches(ck: QuantizedHFCheckpoint | ReturnType<typeof openCheckpoint>, ref: Reference): string[] {
  return Object.entries(ref.dequant_sha256)
    .filter(([name, h]) => sha(ck.readF32Sync(name)) !== h)
    .map(([name]) => name);
}

for (const [dir, dtype] of Object.entries(VARIANTS)) {
  describe(dir, () => {
    const path = fixture("hf", dir);
    const ref = JSON.parse(fs.readFileSync(fixture("hf", dir, "reference.json"), "utf8")) as Reference;

    test("every linear weight is listed packed (4 or 8 bits plus scales) and decodes to the float64 dequantization", () => {
      const ck = openCheckpoint(path);
      try {
        expect(ck).toBeInstanceOf(QuantizedHFCheckpoint);
        for (const name of Object.keys(ref.dequant_sha256)) {
          const t = ck.info(name);
          expect(t.dtype).toMatch(dtype);
          // Bytes per weight: 0.625 (int4, one f16 scale and zero per 32), 3.5 (act-order: both per element), 1.125 (fp8).
          const perWeight = { int4zp_f16: 0.625, int4zpx_f16: 3.5, fp8e4m3: 1.125 }[t.dtype];
          expect(t.byteLength).toBe(t.shape[0]! * t.shape[1]! * perWeight!);
        }
        expect(ck.tensors().some((t) => /\.(qweight|qzeros|scales|g_idx|weight_scale(_inv)?)$/.test(t.name))).toBe(
          false,
        );
        expect(mismatches(ck, ref)).toEqual([]);
      } finally {
        ck.close();
      }
    });

    test("eval: prompt logits within 1e-4 of the float64 forward, 16 greedy ids equal", () => {
      const logits = openSafetensors(fixture("hf", dir, "reference.safetensors")).readF32Sync("prompt_logits");
      const m = LoadedModel.open(path);
      try {
        const rel = relErr(m.logits(ref.prompt_ids), logits);
        console.log(`${dir} eval prompt rel ${rel.toExponential(2)}`);
        expect(rel).toBeLessThanOrEqual(1e-4);
        expect(m.generate(ref.prompt_ids, ref.greedy_ids.length).ids).toEqual(ref.greedy_ids);
      } finally {
        m.close();
      }
    });
  });
}

describe("layouts and act-order", () => {
  test("GPTQ: layer 0 (g_idx = i / 32) keeps one scale per block, layer 1 (act-order) one per element", () => {
    const ck = openCheckpoint(fixture("hf", "llama3-gptq"));
    expect(ck.info("model.layers.0.mlp.down_proj.weight").dtype).toBe("int4zp_f16");
    expect(ck.info("model.layers.1.mlp.down_proj.weight").dtype).toBe("int4zpx_f16");
    ck.close();
  });

  // Planted violations: the same bytes read with a wrong layout must fail the decode check.
  const planted = (dir: string, change: (q: HFQuantConfig) => HFQuantConfig) => {
    const path = fixture("hf", dir);
    const ref = JSON.parse(fs.readFileSync(fixture("hf", dir, "reference.json"), "utf8")) as Reference;
    const ck = new QuantizedHFCheckpoint(openSafetensors(path), change(readHFQuantConfig(path)!));
    try {
      return mismatches(ck, ref).length;
    } finally {
      ck.close();
    }
  };
  test("planted: AWQ read in plain nibble order, GPTQ read without the v1 zero offset, GPTQ read as AWQ order", () => {
    const n = 14;
    expect(
      planted("llama3-awq", (q) => ({ ...q, layout: { ...AWQ_GEMM_LAYOUT, order: [0, 1, 2, 3, 4, 5, 6, 7] } })),
    ).toBe(n);
    expect(
      planted("llama3-gptq", (q) => (q.method === "fp8" ? q : { ...q, layout: { ...q.layout, zeroOffset: 0 } })),
    ).toBe(n);
    expect(
      planted("llama3-gptq", (q) =>
        q.method === "fp8" ? q : { ...q, layout: { ...q.layout, order: AWQ_GEMM_LAYOUT.order } },
      ),
    ).toBe(n);
  });
});

describe("quantization_config parsing: typed errors naming the key", () => {
  const cases: [unknown, string][] = [
    [{ quant_method: "gptq", bits: 8, group_size: 128 }, "quantization_config.bits"],
    [{ quant_method: "gptq", bits: 4, group_size: 48 }, "quantization_config.group_size"],
    [{ quant_method: "gptq", bits: 4, checkpoint_format: "marlin" }, "quantization_config.checkpoint_format"],
    [{ quant_method: "awq", bits: 4, version: "gemv" }, "quantization_config.version"],
    [{ quant_method: "fp8", fmt: "e5m2" }, "quantization_config.fmt"],
    [{ quant_method: "fp8", weight_block_size: [128] }, "quantization_config.weight_block_size"],
    [{ quant_method: "bitsandbytes" }, "quantization_config.quant_method"],
    [{ quant_method: "gptq", bits: "4" }, "quantization_config.bits"],
    [[1, 2], "quantization_config."],
  ];
  for (const [raw, key] of cases)
    test(`${JSON.stringify(raw)} → ${key}`, () => {
      try {
        parseHFQuantConfig(raw, "config.json");
        expect.unreachable();
      } catch (e) {
        expect(e).toBeInstanceOf(ModelError);
        expect((e as ModelError).key).toBe(key);
        expect((e as ModelError).message).toContain("config.json");
      }
    });
  test("compressed-tensors FP8 (channel and block) and AutoGPTQ's quantize_config.json keys parse", () => {
    expect(
      parseHFQuantConfig(
        {
          quant_method: "compressed-tensors",
          config_groups: {
            g: { weights: { type: "float", num_bits: 8, strategy: "block", block_structure: [128, 128] } },
          },
        },
        "c",
      ),
    ).toEqual({ method: "fp8", blockSize: [128, 128] });
    expect(parseHFQuantConfig({ bits: 4, group_size: 128, desc_act: true, sym: true }, "c")).toMatchObject({
      method: "gptq",
      groupSize: 128,
      descAct: true,
    });
  });
});

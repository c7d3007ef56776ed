// GPTQ (v1 zeros, act-order g_idx), AutoAWQ GEMM and FP8 e4m3 (tensor, channel and block scales) checkpoints of the
// llama3 fixture (fixtures/hf/llama3-*, made by tools/hf-quant): weights open packed, every weight decodes to the
// float64 dequantization of the published layouts (sha256 recorded by the tool), the eval forward is within 1e-4 of
// the tool's float64 forward and its 16 greedy ids equal that forward's. Planted: a wrong nibble order or zero offset;
// act-order columns read without gathering x, or gathered in the wrong order.
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import { describe, expect, test } from "vitest";
import {
  AWQ_GEMM_LAYOUT,
  LoadedModel,
  ModelError,
  QuantizedHFCheckpoint,
  TraceError,
  openCheckpoint,
  openSafetensors,
  parseHFQuantConfig,
  readHFConfig,
  readHFQuantConfig,
  type Checkpoint,
  type HFQuantConfig,
  type TensorInfo,
} from "@poot/models";
import { fixture, relErr } from "@poot/testkit";

interface Reference {
  prompt_ids: number[];
  greedy_ids: number[];
  dequant_sha256: Record<string, string>;
}

const VARIANTS = { "llama3-gptq": /^int4zp_f16$/, "llama3-awq": /^int4zp_f16$/, "llama3-fp8": /^fp8e4m3$/ };

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
          // Bytes per weight: 0.625 (int4, one f16 scale and zero per 32, act-order included), 1.125 (fp8).
          const perWeight = { int4zp_f16: 0.625, fp8e4m3: 1.125 }[t.dtype];
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

/** The checkpoint with each act-order weight's `inputOrder` replaced (planted violations of the column order). */
function reordered(ck: Checkpoint, change: (order: Int32Array, name: string) => Int32Array | undefined): Checkpoint {
  const list = ck.tensors().map((t): TensorInfo => {
    if (t.inputOrder === undefined) return t;
    const { inputOrder, ...rest } = t;
    const next = change(inputOrder, t.name);
    return next === undefined ? rest : { ...rest, inputOrder: next };
  });
  const byName = new Map(list.map((t) => [t.name, t]));
  return Object.assign(Object.create(ck) as Checkpoint, { tensors: () => list, info: (n: string) => byName.get(n)! });
}

describe("layouts and act-order", () => {
  const path = fixture("hf", "llama3-gptq");
  const ref = JSON.parse(fs.readFileSync(fixture("hf", "llama3-gptq", "reference.json"), "utf8")) as Reference;

  test("GPTQ act-order (layer 1) is plain grouped int4 with its input columns sorted by group: 0.625 B/weight", () => {
    const ck = openCheckpoint(path);
    try {
      const gidx = new Int32Array(openSafetensors(path).readSync("model.layers.1.mlp.down_proj.g_idx").slice().buffer);
      expect(gidx.some((g, i) => g !== Math.floor(i / 32))).toBe(true); // the fixture's layer 1 is act-order
      expect(ck.info("model.layers.0.mlp.down_proj.weight").inputOrder).toBeUndefined();
      let weights = 0,
        bytes = 0;
      for (const t of ck.tensors().filter((t) => t.name.startsWith("model.layers.1.") && t.dtype !== "BF16")) {
        expect(t.dtype).toBe("int4zp_f16");
        const order = t.inputOrder!;
        expect([...order].sort((a, b) => a - b)).toEqual(Array.from({ length: t.shape[1]! }, (_, i) => i));
        expect(order.some((v, k) => v !== k)).toBe(true);
        weights += t.shape[0]! * t.shape[1]!;
        bytes += t.byteLength;
        expect(ck.readSync(t.name).byteLength).toBe(t.byteLength);
      }
      console.log(`act-order layer 1: ${bytes} B for ${weights} weights = ${bytes / weights} B/weight`);
      expect(bytes / weights).toBe(0.625);
    } finally {
      ck.close();
    }
  });

  // Planted: the permuted weight with x not gathered, or gathered in the inverse order, misses the reference.
  const plantedRel = (change: (order: Int32Array) => Int32Array | undefined) => {
    const logits = openSafetensors(fixture("hf", "llama3-gptq", "reference.safetensors")).readF32Sync("prompt_logits");
    const m = LoadedModel.fromCheckpoint(readHFConfig(path), reordered(openCheckpoint(path), change));
    try {
      return relErr(m.logits(ref.prompt_ids), logits);
    } finally {
      m.close();
    }
  };
  test("planted: act-order x not gathered, or gathered in the inverse order, fails the 1e-4 bound", () => {
    const inverse = (o: Int32Array) => {
      const inv = new Int32Array(o.length);
      o.forEach((v, k) => (inv[v] = k));
      return inv;
    };
    const notGathered = plantedRel(() => undefined),
      wrongOrder = plantedRel(inverse);
    console.log(
      `planted act-order: x not gathered rel ${notGathered.toExponential(2)}, inverse order ${wrongOrder.toExponential(2)}`,
    );
    expect(notGathered).toBeGreaterThan(1e-4);
    expect(wrongOrder).toBeGreaterThan(1e-4);
    expect(plantedRel((o) => o)).toBeLessThanOrEqual(1e-4); // the wrapper itself changes nothing
  });

  test("linears of one input with one act-order (q/k/v, gate/up) share one gather of x: 4 in layer 1, not 7", () => {
    const gathersOfX = (ck: Checkpoint) => {
      const m = LoadedModel.fromCheckpoint(readHFConfig(path), ck);
      try {
        return m.graph({ kind: "prefill", tokens: 4 }).eqns.filter((e) => e.op === "Gather" && e.params["axis"] === 1)
          .length;
      } finally {
        m.close();
      }
    };
    expect(gathersOfX(openCheckpoint(path))).toBe(4);
    // Planted: q's order differs from k's and v's (as a per-linear order would), so q needs its own gather.
    const inverse = (o: Int32Array) => Int32Array.from(o).reverse();
    expect(gathersOfX(reordered(openCheckpoint(path), (o, n) => (n.includes("q_proj") ? inverse(o) : o)))).toBe(5);
  });

  test("a reordered weight used other than as a linear layer is a TraceError naming it", () => {
    const ck = openCheckpoint(path);
    const name = "model.layers.1.mlp.down_proj.weight";
    const list = ck
      .tensors()
      .map((t) => (t.name === "model.norm.weight" ? { ...t, inputOrder: new Int32Array(64) } : t));
    const m = LoadedModel.fromCheckpoint(
      readHFConfig(path),
      Object.assign(Object.create(ck) as Checkpoint, { tensors: () => list }),
    );
    try {
      expect(() => m.logits([1, 2])).toThrow(TraceError);
      expect(() => m.logits([1, 2])).toThrow(/model\.norm\.weight.*reordered/);
      expect(ck.info(name).inputOrder).toBeDefined();
    } finally {
      m.close();
    }
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
    ).toEqual({ method: "fp8", blockSize: [128, 128], activations: "none" });
    expect(parseHFQuantConfig({ bits: 4, group_size: 128, desc_act: true, sym: true }, "c")).toMatchObject({
      method: "gptq",
      groupSize: 128,
      descAct: true,
    });
  });
});

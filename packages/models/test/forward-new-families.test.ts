// The traced forward of the issue #26 families (fixtures/hf/<family>, made by tools/make-fixtures/make_families.py
// with transformers 5.17) against transformers' float64 logits: Granite, SmolLM3, Phi-4 (Phi3ForCausalLM), gpt-oss
// and DeepSeek-V2 (MLA). Prompt logits with f32 and bf16 weights, greedy ids through the KV-cache decode graph, every
// decode step's logits, and prompt+greedy logits in one pass.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, test } from "vitest";
import { LoadedModel, openSafetensors, parseHFConfig, readHFConfig, type ModelConfig } from "@poot/models";
import { fixture, relErr } from "@poot/testkit";

// fixture() regenerates each folder's float32 model.safetensors from its bf16 file when absent (generated.json).
const famDir = (fam: string): string => fixture("hf", fam);
/** Family folder -> the architecture it parses to. */
export const NEW_FAMILIES = {
  granite: "granite",
  smollm3: "smollm3",
  phi4: "phi3",
  gptoss: "gptoss",
  deepseek2: "deepseek2",
} as const;

describe("issue #26 families against transformers' float64 logits", () => {
  for (const [fam, arch] of Object.entries(NEW_FAMILIES)) {
    describe(fam, () => {
      const dir = famDir(fam);
      const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as {
        prompt_ids: number[];
        greedy_ids: number[];
      };
      const refs = openSafetensors(path.join(dir, "reference.safetensors"));
      const promptLogits = refs.readF32Sync("prompt_logits"),
        fullLogits = refs.readF32Sync("full_logits");

      test.each(["f32", "bf16"] as const)("prompt logits (%s weights) within 1e-4", (weights) => {
        const m = LoadedModel.open(dir, { weights });
        expect(m.config.architecture).toBe(arch);
        const rel = relErr(m.logits(ref.prompt_ids), promptLogits);
        console.log(`${fam} ${weights} prompt rel ${rel.toExponential(2)}`);
        expect(rel).toBeLessThanOrEqual(1e-4);
        m.close();
      });

      test("greedy decode with the KV cache reproduces greedy_ids; every step and prompt+greedy logits match", () => {
        const m = LoadedModel.open(dir);
        const gen = m.generate(ref.prompt_ids, ref.greedy_ids.length);
        expect(gen.ids).toEqual(ref.greedy_ids);
        const V = m.config.vocabSize,
          T = ref.prompt_ids.length;
        gen.logits.forEach((row, n) =>
          expect(relErr(row, fullLogits.subarray((T - 1 + n) * V, (T + n) * V))).toBeLessThanOrEqual(1e-4),
        );
        const rel = relErr(m.logits([...ref.prompt_ids, ...ref.greedy_ids]), fullLogits);
        console.log(`${fam} full rel ${rel.toExponential(2)}`);
        expect(rel).toBeLessThanOrEqual(1e-4);
        m.close();
      });
    });
  }
});

describe("planted violations: each family's distinctive feature switched off moves the logits past 1e-4", () => {
  const cases: [string, (c: ModelConfig) => ModelConfig][] = [
    ["granite", (c) => ({ ...c, residualScale: null })],
    ["smollm3", (c) => ({ ...c, layerRope: c.layerRope.map(() => true) })],
    ["phi4", (c) => ({ ...c, rope: { ...c.rope, rotaryDim: c.headDim } })],
    ["gptoss", (c) => ({ ...c, attentionSinks: false })],
    ["deepseek2", (c) => ({ ...c, moe: { ...c.moe!, routedScale: 1 } })],
  ];
  test.each(cases)("%s", (fam, plant) => {
    const dir = famDir(fam);
    const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as { prompt_ids: number[] };
    const refs = openSafetensors(path.join(dir, "reference.safetensors"));
    const ck = openSafetensors(dir);
    const m = LoadedModel.fromCheckpoint(plant(readHFConfig(dir)), ck);
    const rel = relErr(m.logits(ref.prompt_ids), refs.readF32Sync("prompt_logits"));
    console.log(`${fam} planted violation: rel ${rel.toExponential(2)}`);
    expect(rel).toBeGreaterThan(1e-4);
    m.close();
    refs.close();
  });
});

describe("new family configs", () => {
  test("parsed fields", () => {
    expect(readHFConfig(famDir("granite"))).toMatchObject({
      architecture: "granite",
      embeddingScale: 2,
      residualScale: 0.5,
      attentionScale: 0.1,
      logitsDivisor: 4,
    });
    expect(readHFConfig(famDir("smollm3")).layerRope).toEqual([true, false]);
    expect(readHFConfig(famDir("phi4"))).toMatchObject({
      architecture: "phi3",
      numKVHeads: 2,
      rope: { rotaryDim: 12 },
      tieWordEmbeddings: true,
    });
    expect(readHFConfig(famDir("gptoss"))).toMatchObject({
      architecture: "gptoss",
      attentionSinks: true,
      attentionBias: true,
      layerTypes: ["sliding", "full"],
      slidingWindow: 8,
      rope: {
        theta: 150000,
        scaling: { type: "yarn", factor: 32, betaFast: 32, betaSlow: 1, originalMaxPositions: 4096, truncate: false },
      },
      moe: { numExperts: 4, topK: 2, routing: "topk-softmax", clampedSwiglu: { alpha: 1.702, limit: 7 } },
    });
    expect(readHFConfig(famDir("deepseek2"))).toMatchObject({
      architecture: "deepseek2",
      mla: { qLoraRank: null, kvLoraRank: 32, qkNopeHeadDim: 16, qkRopeHeadDim: 8, vHeadDim: 16 },
      moe: {
        numExperts: 4,
        topK: 2,
        routedScale: 1.5,
        sharedIntermediateSize: 32,
        firstDenseLayers: 1,
        normTopKProb: false,
      },
    });
  });

  test("unsupported variants are typed one-line errors naming the key", () => {
    const base = JSON.parse(fs.readFileSync(path.join(famDir("deepseek2"), "config.json"), "utf8")) as Record<
      string,
      unknown
    >;
    const err = (j: Record<string, unknown>): unknown => {
      try {
        parseHFConfig(j, "config.json");
      } catch (e) {
        return e;
      }
      return null;
    };
    expect(err({ ...base, q_lora_rank: 16 })).toMatchObject({
      name: "ConfigError",
      code: "bad-config",
      key: "q_lora_rank",
    });
    expect(err({ ...base, topk_method: "group_limited_greedy" })).toMatchObject({
      code: "bad-config",
      key: "topk_method",
    });
    expect(
      err({
        ...base,
        rope_parameters: {
          rope_type: "yarn",
          rope_theta: 1e4,
          factor: 40,
          mscale: 0.707,
          mscale_all_dim: 0.707,
          original_max_position_embeddings: 4096,
        },
      }),
    ).toMatchObject({ code: "bad-config", key: "rope_scaling" });
    const smol = JSON.parse(fs.readFileSync(path.join(famDir("smollm3"), "config.json"), "utf8")) as Record<
      string,
      unknown
    >;
    expect(err({ ...smol, no_rope_layers: [1] })).toMatchObject({ code: "bad-config", key: "no_rope_layers" });
  });
});

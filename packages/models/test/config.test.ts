// ModelConfig from the fixture config.json files (expected values copied from those files by hand),
// GGUF metadata of the same models agreeing with them, and typed errors for unknown architectures.
import { describe, expect, test } from "vitest";
import {
  ConfigError,
  UnknownArchitectureError,
  configFromGGUF,
  openGGUF,
  openSafetensors,
  parseHFConfig,
  readHFConfig,
} from "@poot/models";
import { fixture, needFixture } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("configs", "gguf", "hf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

describe.skipIf(!FIXTURES)("HF config.json", () => {
  test("llama3: llama3 RoPE scaling, GQA, tied", () => {
    const c = readHFConfig(fixture("hf", "llama3"));
    expect(c).toMatchObject({
      architecture: "llama",
      source: "hf",
      vocabSize: 512,
      hiddenSize: 64,
      intermediateSize: 128,
      numLayers: 2,
      numHeads: 4,
      numKVHeads: 2,
      headDim: 16,
      rmsNormEps: 1e-5,
      tieWordEmbeddings: true,
      qkNorm: false,
      hiddenAct: "silu",
      layerTypes: ["full", "full"],
      moe: null,
      rope: {
        theta: 500000,
        rotaryDim: 16,
        scaling: { type: "llama3", factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositions: 64 },
      },
      bosTokenId: 1,
      eosTokenIds: [2],
    });
  });
  test("gemma3: two RoPE bases, sliding layers, (1+w) norms, embedding scale", () => {
    const c = readHFConfig(fixture("hf", "gemma3"));
    expect(c).toMatchObject({
      architecture: "gemma3",
      vocabSize: 638,
      hiddenAct: "gelu_tanh",
      normPlusOne: true,
      postNorms: true,
      qkNorm: true,
      embeddingScale: 8,
      queryPreAttnScalar: 16,
      slidingWindow: 8,
      layerTypes: ["sliding", "sliding"],
      rope: { theta: 1e6, scaling: null },
      ropeLocal: { theta: 10000 },
      attnLogitSoftcap: null,
      finalLogitSoftcap: null,
    });
  });
  test("olmoe: 8 experts, top-2, no renormalization", () => {
    expect(readHFConfig(fixture("hf", "olmoe"))).toMatchObject({
      architecture: "olmoe",
      qkNorm: true,
      tieWordEmbeddings: false,
      moe: { numExperts: 8, topK: 2, normTopKProb: false, expertIntermediateSize: 32 },
    });
  });
  test("qwen3: q/k norm, θ=1e6, no sliding window", () => {
    expect(readHFConfig(fixture("hf", "qwen3"))).toMatchObject({
      architecture: "qwen3",
      qkNorm: true,
      slidingWindow: null,
      rope: { theta: 1e6 },
      attentionBias: false,
    });
  });
  test("qwen35: hybrid layers, partial RoPE, linear attention params", () => {
    expect(readHFConfig(fixture("hf", "qwen35"))).toMatchObject({
      architecture: "qwen35",
      numLayers: 4,
      layerTypes: ["linear", "full", "linear", "full"],
      rope: { theta: 10000, rotaryDim: 4 },
      attnOutputGate: true,
      linearAttention: { convKernel: 4, numKeyHeads: 2, numValueHeads: 4, keyHeadDim: 16, valueHeadDim: 16 },
    });
  });
  test("released Llama 3.2 1B config (transformers 4 layout: rope_theta + rope_scaling)", () => {
    expect(readHFConfig(fixture("configs", "llama-3.2-1b.json"))).toMatchObject({
      architecture: "llama",
      hiddenSize: 2048,
      numLayers: 16,
      numHeads: 32,
      numKVHeads: 8,
      headDim: 64,
      vocabSize: 128256,
      intermediateSize: 8192,
      rope: { theta: 500000, scaling: { type: "llama3", factor: 32, originalMaxPositions: 8192 } },
      bosTokenId: 128000,
    });
  });
});

describe("other families from hand-written configs (transformers 4 keys)", () => {
  test("gemma2: soft-caps and alternating sliding layers", () => {
    const c = parseHFConfig({
      model_type: "gemma2",
      hidden_size: 2304,
      num_attention_heads: 8,
      num_key_value_heads: 4,
      head_dim: 256,
      num_hidden_layers: 4,
      vocab_size: 256000,
      intermediate_size: 9216,
      attn_logit_softcapping: 50,
      final_logit_softcapping: 30,
      sliding_window: 4096,
      query_pre_attn_scalar: 256,
      rope_theta: 10000,
      hidden_activation: "gelu_pytorch_tanh",
    });
    expect(c).toMatchObject({
      architecture: "gemma2",
      attnLogitSoftcap: 50,
      finalLogitSoftcap: 30,
      layerTypes: ["sliding", "full", "sliding", "full"],
      tieWordEmbeddings: true,
      embeddingScale: Math.sqrt(2304),
    });
  });
  const PLAIN_ROUTING = {
    routing: "softmax-topk",
    routedScale: 1,
    sharedIntermediateSize: 0,
    firstDenseLayers: 0,
    clampedSwiglu: null,
  };
  test("mixtral / qwen3-moe experts, phi3 fused weights", () => {
    expect(
      parseHFConfig({
        model_type: "mixtral",
        hidden_size: 64,
        num_attention_heads: 4,
        num_hidden_layers: 1,
        vocab_size: 10,
        intermediate_size: 32,
        num_local_experts: 8,
        num_experts_per_tok: 2,
      }).moe,
    ).toEqual({ numExperts: 8, topK: 2, normTopKProb: true, expertIntermediateSize: 32, ...PLAIN_ROUTING });
    expect(
      parseHFConfig({
        model_type: "qwen3_moe",
        hidden_size: 64,
        num_attention_heads: 4,
        num_hidden_layers: 1,
        vocab_size: 10,
        intermediate_size: 64,
        moe_intermediate_size: 16,
        num_experts: 128,
        num_experts_per_tok: 8,
        norm_topk_prob: true,
      }).moe,
    ).toEqual({ numExperts: 128, topK: 8, normTopKProb: true, expertIntermediateSize: 16, ...PLAIN_ROUTING });
    expect(
      parseHFConfig({
        model_type: "phi3",
        hidden_size: 64,
        num_attention_heads: 4,
        num_hidden_layers: 1,
        vocab_size: 10,
        intermediate_size: 64,
      }).fusedQKV,
    ).toBe(true);
  });
  test("unknown architecture and bad values are typed errors", () => {
    const e = (() => {
      try {
        parseHFConfig({ model_type: "mamba", hidden_size: 1 }, "c.json");
      } catch (x) {
        return x;
      }
    })();
    expect(e).toBeInstanceOf(UnknownArchitectureError);
    expect((e as UnknownArchitectureError).architecture).toBe("mamba");
    expect((e as UnknownArchitectureError).file).toBe("c.json");
    expect(() => parseHFConfig({ model_type: "llama", hidden_size: "64" })).toThrow(ConfigError);
    expect(() =>
      parseHFConfig({ model_type: "llama", hidden_size: 64, num_attention_heads: 4, vocab_size: 8 }),
    ).toThrow(/num_hidden_layers/);
  });
});

describe.skipIf(!FIXTURES)("GGUF metadata agrees with config.json of the same model", () => {
  for (const fam of ["llama3", "qwen3", "gemma3", "olmoe"]) {
    test(fam, () => {
      const g = openGGUF(fixture("gguf", fam, "model-F32.gguf"));
      const c = configFromGGUF(g);
      const h = readHFConfig(fixture("hf", fam));
      for (const k of [
        "architecture",
        "vocabSize",
        "hiddenSize",
        "numLayers",
        "numHeads",
        "headDim",
        "tieWordEmbeddings",
        "qkNorm",
        "hiddenAct",
        "moe",
        "slidingWindow",
        "layerTypes",
        "embeddingScale",
        "postNorms",
      ] as const) {
        expect([k, c[k]]).toEqual([k, h[k]]);
      }
      expect(c.rmsNormEps).toBeCloseTo(h.rmsNormEps, 12);
      expect(c.rope.theta).toBe(h.rope.theta);
      // olmoe's GGUF repeats its 2 KV heads to 4 (llama.cpp assumes n_head_kv == n_head; fixture README).
      expect(c.numKVHeads).toBe(fam === "olmoe" ? 4 : h.numKVHeads);
      expect(c.ropeFreqsTensor).toBe(fam === "llama3" ? "rope_freqs.weight" : null);
      if (fam === "gemma3") expect(c.ropeLocal?.theta).toBe(h.ropeLocal?.theta);
      g.close();
    });
  }
  test("gemma3 GGUF norms are HF norms + 1 (so normPlusOne is false for GGUF)", async () => {
    const g = openGGUF(fixture("gguf", "gemma3", "model-F32.gguf"));
    const s = openSafetensors(fixture("hf", "gemma3"));
    expect(configFromGGUF(g).normPlusOne).toBe(false);
    const a = await g.readF32("blk.0.attn_norm.weight");
    const b = await s.readF32("model.layers.0.input_layernorm.weight");
    for (let i = 0; i < a.length; i++) expect(a[i]).toBe(Math.fround(b[i]! + 1));
  });
});

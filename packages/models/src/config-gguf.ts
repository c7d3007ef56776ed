// GGUF metadata (`<arch>.block_count`, `<arch>.attention.head_count`, ...) -> ModelConfig.
// Where llama.cpp hard-codes a family fact instead of storing it (Gemma 3 local RoPE base, SWA pattern), so do we.
import type { Architecture, LayerKind, ModelConfig, RopeScaling } from "./config.js";
import { ConfigError, UnknownArchitectureError } from "./errors.js";
import type { GGUFCheckpoint, GGUFValue } from "./gguf.js";

const GGUF_ARCHS: Record<string, Architecture> = {
  llama: "llama",
  mistral: "mistral",
  qwen2: "qwen2",
  qwen3: "qwen3",
  gemma2: "gemma2",
  gemma3: "gemma3",
  phi3: "phi3",
  olmoe: "olmoe",
  qwen3moe: "qwen3moe",
  qwen35: "qwen35",
};

/** Routing of the GGUF MoE families (Mixtral, OLMoE, Qwen3-MoE): softmax then top-k, no extras. */
const PLAIN_ROUTING = {
  routing: "softmax-topk",
  routedScale: 1,
  sharedIntermediateSize: 0,
  firstDenseLayers: 0,
  clampedSwiglu: null,
} as const;

/** Builds a ModelConfig from a GGUF file's metadata (and its tensor directory, for tied embeddings / rope_freqs). */
export function configFromGGUF(g: GGUFCheckpoint): ModelConfig {
  const file = g.path;
  const archStr = g.get("general.architecture");
  if (typeof archStr !== "string")
    throw new ConfigError("missing-metadata", "general.architecture is missing", { file, key: "general.architecture" });
  let arch = GGUF_ARCHS[archStr];
  if (arch === undefined) throw new UnknownArchitectureError(archStr, file);
  const key = (k: string) => `${archStr}.${k}`;
  const get = (k: string): GGUFValue | undefined => g.get(key(k));
  const num = (k: string, dflt?: number): number => {
    const v = get(k);
    if (v === undefined) {
      if (dflt !== undefined) return dflt;
      throw new ConfigError("missing-metadata", `metadata ${key(k)} is missing`, { file, key: key(k) });
    }
    if (typeof v !== "number")
      throw new ConfigError("bad-metadata", `metadata ${key(k)} must be a number`, { file, key: key(k), value: v });
    return v;
  };
  const tokens = g.get("tokenizer.ggml.tokens");
  const vocabSize = num("vocab_size", Array.isArray(tokens) ? tokens.length : undefined);
  const hidden = num("embedding_length");
  const numHeads = num("attention.head_count");
  const headDim = num("attention.key_length", hidden / numHeads);
  const numLayers = num("block_count");
  const expertCount = num("expert_count", 0);
  // llama.cpp stores Mixtral as `llama` with experts.
  if (arch === "llama" && expertCount > 0) arch = "mixtral";
  const isGemma = arch === "gemma2" || arch === "gemma3";
  const swa = get("attention.sliding_window");
  const slidingWindow = typeof swa === "number" ? swa : null;
  const layerTypes: LayerKind[] = [];
  for (let i = 0; i < numLayers; i++) {
    if (arch === "gemma2") layerTypes.push(i % 2 === 0 ? "sliding" : "full");
    else if (arch === "gemma3") layerTypes.push((i + 1) % 6 === 0 ? "full" : "sliding");
    else layerTypes.push(slidingWindow !== null && arch === "phi3" ? "sliding" : "full");
  }
  const rotaryDim = num("rope.dimension_count", headDim);
  let scaling: RopeScaling | null = null;
  const st = get("rope.scaling.type");
  if (st === "linear") scaling = { type: "linear", factor: num("rope.scaling.factor") };
  const ff = num("feed_forward_length", 0);
  const eos = g.get("tokenizer.ggml.eos_token_id");
  const bos = g.get("tokenizer.ggml.bos_token_id");
  return {
    architecture: arch,
    sourceArchitecture: archStr,
    source: "gguf",
    vocabSize,
    hiddenSize: hidden,
    intermediateSize: ff,
    numLayers,
    numHeads,
    numKVHeads: num("attention.head_count_kv", numHeads),
    headDim,
    rmsNormEps: num("attention.layer_norm_rms_epsilon", 1e-6),
    maxPositions: num("context_length", 0),
    hiddenAct: isGemma ? "gelu_tanh" : "silu",
    rope: { theta: num("rope.freq_base", 10000), rotaryDim, scaling },
    ropeLocal: arch === "gemma3" ? { theta: num("rope.freq_base_swa", 10000), rotaryDim, scaling: null } : null,
    ropeFreqsTensor: g.has("rope_freqs.weight") ? "rope_freqs.weight" : null,
    layerTypes,
    slidingWindow,
    tieWordEmbeddings: !g.has("output.weight"),
    attentionBias: g.has("blk.0.attn_q.bias"),
    qkNorm: g.has("blk.0.attn_q_norm.weight"),
    // convert_hf_to_gguf adds 1 to Gemma norm weights, so GGUF norms are plain RMSNorm.
    normPlusOne: false,
    postNorms: isGemma,
    embeddingScale: isGemma ? Math.sqrt(hidden) : null,
    queryPreAttnScalar: headDim,
    attnLogitSoftcap: typeof get("attn_logit_softcapping") === "number" ? num("attn_logit_softcapping") : null,
    finalLogitSoftcap: typeof get("final_logit_softcapping") === "number" ? num("final_logit_softcapping") : null,
    fusedQKV: g.has("blk.0.attn_qkv.weight"),
    moe:
      expertCount > 0
        ? {
            numExperts: expertCount,
            topK: num("expert_used_count"),
            normTopKProb: arch === "mixtral" || (arch === "qwen3moe" && get("expert_weights_norm") !== false),
            expertIntermediateSize: num("expert_feed_forward_length", ff),
            ...PLAIN_ROUTING,
          }
        : null,
    linearAttention: null,
    attnOutputGate: false,
    residualScale: null,
    attentionScale: null,
    logitsDivisor: null,
    layerRope: layerTypes.map(() => true),
    attentionSinks: false,
    mla: null,
    bosTokenId: typeof bos === "number" ? bos : null,
    eosTokenIds: typeof eos === "number" ? [eos] : [],
  };
}

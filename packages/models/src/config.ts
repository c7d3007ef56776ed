// ModelConfig: one typed, normalized description of a model's hyperparameters for every supported family,
// built from a Hugging Face config.json (see config-hf.ts) or GGUF metadata (see config-gguf.ts).

/**
 * Model families poot traces (one tracer each; Llama 2/3/3.x and Mistral share `llama`; Phi-3 and Phi-4 share
 * `phi3`).
 */
export type Architecture =
  | "llama"
  | "mistral"
  | "qwen2"
  | "qwen3"
  | "gemma2"
  | "gemma3"
  | "phi3"
  | "mixtral"
  | "olmoe"
  | "qwen3moe"
  | "qwen35"
  | "granite"
  | "smollm3"
  | "gptoss"
  | "deepseek2";

/** Every architecture, in a stable order. */
export const ARCHITECTURES: readonly Architecture[] = [
  "llama",
  "mistral",
  "qwen2",
  "qwen3",
  "gemma2",
  "gemma3",
  "phi3",
  "mixtral",
  "olmoe",
  "qwen3moe",
  "qwen35",
  "granite",
  "smollm3",
  "gptoss",
  "deepseek2",
];

/** RoPE frequency scaling. `llama3` rescales low frequencies (Llama 3.1/3.2); `linear` divides positions. */
export type RopeScaling =
  | {
      readonly type: "llama3";
      readonly factor: number;
      readonly lowFreqFactor: number;
      readonly highFreqFactor: number;
      readonly originalMaxPositions: number;
    }
  | { readonly type: "linear"; readonly factor: number }
  | {
      readonly type: "longrope";
      readonly shortFactor: readonly number[];
      readonly longFactor: readonly number[];
      readonly originalMaxPositions: number;
    }
  | YarnScaling;

/**
 * YaRN (gpt-oss): each frequency blends interpolation (÷ factor) and extrapolation by a linear ramp between the
 * correction dims of `betaFast` and `betaSlow`; cos/sin are multiplied by `attentionFactor`.
 */
export interface YarnScaling {
  readonly type: "yarn";
  readonly factor: number;
  readonly betaFast: number;
  readonly betaSlow: number;
  readonly originalMaxPositions: number;
  /** Round the correction range to whole dims (HF's default true; gpt-oss sets false). */
  readonly truncate: boolean;
  /** cos/sin multiplier (HF default 0.1·ln(factor) + 1). */
  readonly attentionFactor: number;
}

/** RoPE of one kind of layer. */
export interface RopeConfig {
  /** Base θ of the inverse frequencies. */
  readonly theta: number;
  /** Number of leading dims of each head that rotate (headDim × partial_rotary_factor). */
  readonly rotaryDim: number;
  /** Frequency scaling, or null. */
  readonly scaling: RopeScaling | null;
}

/** Kind of one decoder layer's token mixer. */
export type LayerKind = "full" | "sliding" | "linear";

/** Routed-experts MLP (Mixtral, OLMoE, Qwen3-MoE). */
export interface MoeConfig {
  /** Experts per MoE layer. */
  readonly numExperts: number;
  /** Experts used per token. */
  readonly topK: number;
  /** Whether the top-k routing weights are renormalized to sum to 1 (Mixtral: yes; OLMoE: no). */
  readonly normTopKProb: boolean;
  /** Hidden size of each expert's MLP. */
  readonly expertIntermediateSize: number;
  /**
   * `softmax-topk`: softmax over every expert, keep the top-k (Mixtral, OLMoE, DeepSeek); `topk-softmax`: softmax
   * over the top-k router logits only (gpt-oss, whose router also has a bias).
   */
  readonly routing: "softmax-topk" | "topk-softmax";
  /** Multiplier of the routing weights (DeepSeek `routed_scaling_factor`; 1 elsewhere). */
  readonly routedScale: number;
  /** Hidden size of the always-on shared expert MLP (DeepSeek), or 0 for none. */
  readonly sharedIntermediateSize: number;
  /** Leading layers with a dense MLP instead of experts (DeepSeek `first_k_dense_replace`; 0 elsewhere). */
  readonly firstDenseLayers: number;
  /**
   * gpt-oss experts: biases on both projections, gate/up interleaved in one [E, D, 2F] weight, and the clamped
   * SwiGLU (up + 1) · g · sigmoid(alpha · g) with g = min(gate, limit), up clamped to ±limit. Null elsewhere.
   */
  readonly clampedSwiglu: { readonly alpha: number; readonly limit: number } | null;
}

/** Multi-head latent attention (DeepSeek-V2): keys and values are up-projected from a cached low-rank latent. */
export interface MlaConfig {
  /** Rank of the q down-projection, or null when q is one projection (V2-Lite). */
  readonly qLoraRank: number | null;
  /** Rank of the KV latent (what the cache holds per token, with the RoPE key). */
  readonly kvLoraRank: number;
  /** Per-head query/key dims without RoPE. */
  readonly qkNopeHeadDim: number;
  /** Per-head query dims with RoPE; the RoPE key (this many dims) is shared by every head. */
  readonly qkRopeHeadDim: number;
  /** Per-head value dims. */
  readonly vHeadDim: number;
}

/** Gated delta-net linear attention (Qwen3.5 hybrid layers). */
export interface LinearAttentionConfig {
  /** Width of the causal depthwise conv1d over q/k/v. */
  readonly convKernel: number;
  /** Key heads. */
  readonly numKeyHeads: number;
  /** Value heads. */
  readonly numValueHeads: number;
  /** Key head dim. */
  readonly keyHeadDim: number;
  /** Value head dim. */
  readonly valueHeadDim: number;
}

/** Normalized hyperparameters of a decoder-only model, from either checkpoint format. */
export interface ModelConfig {
  /** Family. */
  readonly architecture: Architecture;
  /** The architecture string as found (`LlamaForCausalLM`, `qwen3`, ...). */
  readonly sourceArchitecture: string;
  /** Where the config came from. */
  readonly source: "hf" | "gguf";
  readonly vocabSize: number;
  readonly hiddenSize: number;
  /** Dense MLP hidden size (for MoE models, the dense layers' size if any, else the expert size). */
  readonly intermediateSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly numKVHeads: number;
  readonly headDim: number;
  readonly rmsNormEps: number;
  readonly maxPositions: number;
  /** MLP activation: SiLU-gated (SwiGLU) or tanh-approximated GELU-gated (Gemma). */
  readonly hiddenAct: "silu" | "gelu_tanh";
  /** RoPE of full-attention layers. */
  readonly rope: RopeConfig;
  /** RoPE of sliding-window layers when it differs (Gemma 3 local base 10k), else null. */
  readonly ropeLocal: RopeConfig | null;
  /** GGUF only: name of a `rope_freqs` tensor holding per-frequency divisors (llama3 scaling baked in). */
  readonly ropeFreqsTensor: string | null;
  /** Kind of each layer (length numLayers). */
  readonly layerTypes: readonly LayerKind[];
  /** Sliding window size (tokens) of `sliding` layers, or null. */
  readonly slidingWindow: number | null;
  readonly tieWordEmbeddings: boolean;
  /** Bias on q/k/v projections (Qwen2, gpt-oss; gpt-oss also on o). */
  readonly attentionBias: boolean;
  /** Per-head RMSNorm of q and k (Qwen3, Gemma 3, OLMoE over the whole projection). */
  readonly qkNorm: boolean;
  /**
   * RMSNorm multiplies by (1 + w): Gemma (HF checkpoints only; GGUF stores 1+w) and Qwen3.5's layer, final
   * and q/k norms (its delta-net gated output norm is a plain w·x norm, as in Qwen3-Next).
   */
  readonly normPlusOne: boolean;
  /** Gemma 2/3: extra norms after attention and after the MLP. */
  readonly postNorms: boolean;
  /** Multiplier of the token embeddings (Gemma: sqrt(hiddenSize)), or null. */
  readonly embeddingScale: number | null;
  /** Attention scores are scaled by queryPreAttnScalar^-1/2 (default headDim). */
  readonly queryPreAttnScalar: number;
  /** Gemma 2 attention soft-cap (tanh), or null. */
  readonly attnLogitSoftcap: number | null;
  /** Gemma 2 final logit soft-cap, or null. */
  readonly finalLogitSoftcap: number | null;
  /** Phi-3: qkv and gate/up stored fused. */
  readonly fusedQKV: boolean;
  /** Routed experts, or null for dense models. */
  readonly moe: MoeConfig | null;
  /** Qwen3.5 linear-attention parameters, or null. */
  readonly linearAttention: LinearAttentionConfig | null;
  /** Qwen3.5: full-attention output is gated by sigmoid(gate) from a doubled q projection. */
  readonly attnOutputGate: boolean;
  /** Granite: residual branches are multiplied by this before they are added, or null. */
  readonly residualScale: number | null;
  /** Granite: the attention score scale (replaces queryPreAttnScalar^-1/2), or null. */
  readonly attentionScale: number | null;
  /** Granite: logits are divided by this, or null. */
  readonly logitsDivisor: number | null;
  /** SmolLM3: whether each layer applies RoPE (false: a NoPE layer). Length numLayers. */
  readonly layerRope: readonly boolean[];
  /** gpt-oss: a learned per-head sink logit joins each softmax (and takes its share of the probability). */
  readonly attentionSinks: boolean;
  /** DeepSeek-V2 multi-head latent attention, or null. */
  readonly mla: MlaConfig | null;
  readonly bosTokenId: number | null;
  readonly eosTokenIds: readonly number[];
}

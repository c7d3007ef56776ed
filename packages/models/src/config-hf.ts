// Hugging Face config.json -> ModelConfig, for transformers 4.x (rope_theta/rope_scaling) and 5.x
// (rope_parameters, possibly per layer type) layouts; multimodal configs use their text_config.
import * as fs from "node:fs";
import * as path from "node:path";
import type { Architecture, LayerKind, MlaConfig, ModelConfig, RopeConfig, RopeScaling } from "./config.js";
import { ConfigError, UnknownArchitectureError } from "./errors.js";

type Json = Record<string, unknown>;

const MODEL_TYPES: Record<string, Architecture> = {
  llama: "llama",
  mistral: "mistral",
  qwen2: "qwen2",
  qwen3: "qwen3",
  gemma2: "gemma2",
  gemma3: "gemma3",
  gemma3_text: "gemma3",
  phi3: "phi3",
  mixtral: "mixtral",
  olmoe: "olmoe",
  qwen3_moe: "qwen3moe",
  qwen3_5: "qwen35",
  qwen3_5_text: "qwen35",
  granite: "granite",
  smollm3: "smollm3",
  gpt_oss: "gptoss",
  deepseek_v2: "deepseek2",
};

class Reader {
  constructor(
    readonly j: Json,
    readonly file: string | undefined,
  ) {}
  has(k: string): boolean {
    return this.j[k] !== undefined && this.j[k] !== null;
  }
  num(k: string, dflt?: number): number {
    const v = this.j[k];
    if (v === undefined || v === null) {
      if (dflt !== undefined) return dflt;
      throw new ConfigError("missing-metadata", `config.json lacks "${k}"`, { file: this.file, key: k });
    }
    if (typeof v !== "number" || !Number.isFinite(v))
      throw new ConfigError("bad-config", `"${k}" must be a number`, { file: this.file, key: k, value: v });
    return v;
  }
  int(k: string, dflt?: number): number {
    const v = this.num(k, dflt);
    if (!Number.isSafeInteger(v) || v < 0)
      throw new ConfigError("bad-config", `"${k}" must be a non-negative integer`, {
        file: this.file,
        key: k,
        value: v,
      });
    return v;
  }
  optNum(k: string): number | null {
    return this.has(k) ? this.num(k) : null;
  }
  bool(k: string, dflt: boolean): boolean {
    const v = this.j[k];
    if (v === undefined || v === null) return dflt;
    if (typeof v !== "boolean")
      throw new ConfigError("bad-config", `"${k}" must be a boolean`, { file: this.file, key: k, value: v });
    return v;
  }
  obj(k: string): Json | null {
    const v = this.j[k];
    if (v === undefined || v === null) return null;
    if (typeof v !== "object" || Array.isArray(v))
      throw new ConfigError("bad-config", `"${k}" must be an object`, { file: this.file, key: k, value: v });
    return v as Json;
  }
}

function scalingOf(p: Json | null, r: Reader): RopeScaling | null {
  if (p === null) return null;
  const type = (p.rope_type ?? p.type) as unknown;
  const pr = new Reader(p, r.file);
  switch (type) {
    case undefined:
    case "default":
      return null;
    case "llama3":
      return {
        type: "llama3",
        factor: pr.num("factor"),
        lowFreqFactor: pr.num("low_freq_factor"),
        highFreqFactor: pr.num("high_freq_factor"),
        originalMaxPositions: pr.int("original_max_position_embeddings"),
      };
    case "linear":
      return { type: "linear", factor: pr.num("factor") };
    case "longrope":
    case "su":
      return {
        type: "longrope",
        shortFactor: p.short_factor as number[],
        longFactor: p.long_factor as number[],
        originalMaxPositions: r.int(
          "original_max_position_embeddings",
          pr.int("original_max_position_embeddings", 4096),
        ),
      };
    case "yarn": {
      const factor = pr.num("factor");
      if (pr.has("mscale") || pr.has("mscale_all_dim")) {
        throw new ConfigError("bad-config", "YaRN with mscale / mscale_all_dim (DeepSeek's variant) is not supported", {
          file: r.file,
          key: "rope_scaling",
          value: "yarn",
        });
      }
      return {
        type: "yarn",
        factor,
        betaFast: pr.num("beta_fast", 32),
        betaSlow: pr.num("beta_slow", 1),
        originalMaxPositions: pr.int(
          "original_max_position_embeddings",
          r.int("original_max_position_embeddings", 4096),
        ),
        truncate: pr.bool("truncate", true),
        attentionFactor: pr.num("attention_factor", factor <= 1 ? 1 : 0.1 * Math.log(factor) + 1),
      };
    }
    default:
      throw new ConfigError("bad-config", `unsupported rope scaling type ${JSON.stringify(type)}`, {
        file: r.file,
        key: "rope_scaling",
        value: type,
      });
  }
}

function ropeOf(p: Json | null, r: Reader, rotaryDim: number, fallbackTheta: number): RopeConfig {
  const theta = p !== null && typeof p.rope_theta === "number" ? p.rope_theta : fallbackTheta;
  return { theta, rotaryDim, scaling: scalingOf(p, r) };
}

/** Parses a config.json object into a ModelConfig; `file` is used in errors. */
export function parseHFConfig(json: unknown, file?: string): ModelConfig {
  if (typeof json !== "object" || json === null)
    throw new ConfigError("bad-config", "config.json is not an object", { file });
  let j = json as Json;
  const sourceArchitecture = String(
    (Array.isArray(j.architectures) ? j.architectures[0] : undefined) ?? j.model_type ?? "<none>",
  );
  const modelType = String(j.model_type ?? "");
  const arch = MODEL_TYPES[modelType];
  if (arch === undefined) throw new UnknownArchitectureError(modelType === "" ? sourceArchitecture : modelType, file);
  if (typeof j.text_config === "object" && j.text_config !== null)
    j = {
      ...(j.text_config as Json),
      tie_word_embeddings: j.tie_word_embeddings ?? (j.text_config as Json).tie_word_embeddings,
    };
  const r = new Reader(j, file);
  const hidden = r.int("hidden_size");
  const numHeads = r.int("num_attention_heads");
  const headDim = r.int("head_dim", hidden / numHeads);
  const numLayers = r.int("num_hidden_layers");
  const rp = r.obj("rope_parameters");
  const partial = r.num(
    "partial_rotary_factor",
    rp !== null && typeof rp.partial_rotary_factor === "number" ? rp.partial_rotary_factor : 1,
  );
  const rotaryDim = Math.round(headDim * partial);
  const isGemma = arch === "gemma2" || arch === "gemma3";
  // transformers 5 may nest rope parameters per layer type (Gemma 3: full_attention / sliding_attention).
  const nested = rp !== null && typeof rp.full_attention === "object";
  const fullP = nested ? (rp.full_attention as Json) : (rp ?? r.obj("rope_scaling"));
  const fallbackTheta = r.num("rope_theta", 10000);
  const rope = ropeOf(fullP, r, rotaryDim, fallbackTheta);
  let ropeLocal: RopeConfig | null = null;
  if (nested && typeof rp.sliding_attention === "object")
    ropeLocal = ropeOf(rp.sliding_attention as Json, r, rotaryDim, 10000);
  else if (arch === "gemma3") ropeLocal = { theta: r.num("rope_local_base_freq", 10000), rotaryDim, scaling: null };
  const slidingWindow =
    r.has("sliding_window") && ((arch !== "qwen2" && arch !== "qwen3") || r.bool("use_sliding_window", false))
      ? r.int("sliding_window")
      : null;
  const layerTypes = layerKinds(arch, j, numLayers, slidingWindow, r);
  const moe = moeOf(arch, r);
  const mla: MlaConfig | null =
    arch === "deepseek2"
      ? {
          qLoraRank: r.optNum("q_lora_rank"),
          kvLoraRank: r.int("kv_lora_rank"),
          qkNopeHeadDim: r.int("qk_nope_head_dim"),
          qkRopeHeadDim: r.int("qk_rope_head_dim"),
          vHeadDim: r.int("v_head_dim"),
        }
      : null;
  if (mla !== null && mla.qLoraRank !== null)
    throw new ConfigError("bad-config", "DeepSeek MLA with a q LoRA (q_lora_rank) is not supported; V2-Lite has none", {
      file,
      key: "q_lora_rank",
      value: mla.qLoraRank,
    });
  const granite = arch === "granite";
  const hiddenAct = String(j.hidden_activation ?? j.hidden_act ?? "silu");
  const eos = j.eos_token_id;
  return {
    architecture: arch,
    sourceArchitecture,
    source: "hf",
    vocabSize: r.int("vocab_size"),
    hiddenSize: hidden,
    intermediateSize: r.int("intermediate_size", moe?.expertIntermediateSize ?? 0),
    numLayers,
    numHeads,
    numKVHeads: r.int("num_key_value_heads", numHeads),
    headDim,
    rmsNormEps: r.num("rms_norm_eps", 1e-6),
    maxPositions: r.int("max_position_embeddings", 0),
    hiddenAct: hiddenAct.startsWith("gelu") ? "gelu_tanh" : "silu",
    rope,
    ropeLocal,
    ropeFreqsTensor: null,
    layerTypes,
    slidingWindow,
    tieWordEmbeddings: r.bool("tie_word_embeddings", isGemma),
    attentionBias: r.bool("attention_bias", arch === "qwen2" || arch === "gptoss"),
    qkNorm: arch === "qwen3" || arch === "gemma3" || arch === "olmoe" || arch === "qwen3moe" || arch === "qwen35",
    normPlusOne: isGemma || arch === "qwen35",
    postNorms: isGemma,
    embeddingScale: isGemma ? Math.sqrt(hidden) : granite ? r.num("embedding_multiplier", 1) : null,
    queryPreAttnScalar: r.num("query_pre_attn_scalar", headDim),
    attnLogitSoftcap: r.optNum("attn_logit_softcapping"),
    finalLogitSoftcap: r.optNum("final_logit_softcapping"),
    fusedQKV: arch === "phi3",
    moe,
    linearAttention:
      arch === "qwen35"
        ? {
            convKernel: r.int("linear_conv_kernel_dim"),
            numKeyHeads: r.int("linear_num_key_heads"),
            numValueHeads: r.int("linear_num_value_heads"),
            keyHeadDim: r.int("linear_key_head_dim"),
            valueHeadDim: r.int("linear_value_head_dim"),
          }
        : null,
    attnOutputGate: arch === "qwen35",
    residualScale: granite ? r.num("residual_multiplier", 1) : null,
    attentionScale: granite ? r.num("attention_multiplier") : null,
    logitsDivisor: granite ? r.num("logits_scaling", 1) : null,
    layerRope: ropeLayers(arch, j, numLayers, r),
    attentionSinks: arch === "gptoss",
    mla,
    bosTokenId: typeof j.bos_token_id === "number" ? j.bos_token_id : null,
    eosTokenIds:
      typeof eos === "number" ? [eos] : Array.isArray(eos) ? eos.filter((x): x is number => typeof x === "number") : [],
  };
}

function layerKinds(arch: Architecture, j: Json, n: number, window: number | null, r: Reader): LayerKind[] {
  if (Array.isArray(j.layer_types)) {
    if (j.layer_types.length !== n)
      throw new ConfigError("bad-config", `layer_types has ${j.layer_types.length} entries for ${n} layers`, {
        file: r.file,
        key: "layer_types",
      });
    return j.layer_types.map((t, i) => {
      if (t === "full_attention") return "full";
      if (t === "sliding_attention") return window === null ? "full" : "sliding";
      if (t === "linear_attention") return "linear";
      throw new ConfigError("bad-config", `layer ${i}: unknown layer type ${JSON.stringify(t)}`, {
        file: r.file,
        key: "layer_types",
        value: t,
      });
    });
  }
  const kinds: LayerKind[] = [];
  for (let i = 0; i < n; i++) {
    if (arch === "gemma2") kinds.push(i % 2 === 0 ? "sliding" : "full");
    else if (arch === "gemma3")
      kinds.push(
        (i + 1) % r.int("sliding_window_pattern", r.int("_sliding_window_pattern", 6)) === 0 ? "full" : "sliding",
      );
    else if (arch === "qwen35") kinds.push((i + 1) % r.int("full_attention_interval", 4) === 0 ? "full" : "linear");
    else
      kinds.push(window !== null && (arch === "mistral" || arch === "mixtral" || arch === "phi3") ? "sliding" : "full");
  }
  return kinds;
}

/** SmolLM3's no_rope_layers (1: RoPE, 0: NoPE), else every layer rotates. */
function ropeLayers(arch: Architecture, j: Json, n: number, r: Reader): boolean[] {
  if (arch !== "smollm3") return new Array<boolean>(n).fill(true);
  const list = j.no_rope_layers;
  if (list === undefined || list === null) {
    const every = r.int("no_rope_layer_interval", 4);
    return Array.from({ length: n }, (_, i) => (i + 1) % every !== 0);
  }
  if (!Array.isArray(list) || list.length < n || list.some((x) => x !== 0 && x !== 1)) {
    throw new ConfigError("bad-config", `no_rope_layers must list 0 or 1 for each of the ${n} layers`, {
      file: r.file,
      key: "no_rope_layers",
      value: list,
    });
  }
  return list.slice(0, n).map((x) => x === 1);
}

// transformers 5 writes num_local_experts where 4.x wrote num_experts (Qwen3-MoE).
function expertCount(r: Reader): number {
  return r.has("num_experts") ? r.int("num_experts") : r.int("num_local_experts");
}

const PLAIN = {
  routing: "softmax-topk",
  routedScale: 1,
  sharedIntermediateSize: 0,
  firstDenseLayers: 0,
  clampedSwiglu: null,
} as const;

function moeOf(arch: Architecture, r: Reader): ModelConfig["moe"] {
  switch (arch) {
    case "mixtral":
      return {
        numExperts: r.int("num_local_experts"),
        topK: r.int("num_experts_per_tok"),
        normTopKProb: true,
        expertIntermediateSize: r.int("intermediate_size"),
        ...PLAIN,
      };
    case "olmoe":
      return {
        numExperts: expertCount(r),
        topK: r.int("num_experts_per_tok"),
        normTopKProb: r.bool("norm_topk_prob", false),
        expertIntermediateSize: r.int("intermediate_size"),
        ...PLAIN,
      };
    case "qwen3moe":
      return {
        numExperts: expertCount(r),
        topK: r.int("num_experts_per_tok"),
        normTopKProb: r.bool("norm_topk_prob", true),
        expertIntermediateSize: r.int("moe_intermediate_size"),
        ...PLAIN,
      };
    case "gptoss":
      return {
        numExperts: expertCount(r),
        topK: r.int("num_experts_per_tok"),
        normTopKProb: false,
        expertIntermediateSize: r.int("intermediate_size"),
        ...PLAIN,
        routing: "topk-softmax",
        clampedSwiglu: { alpha: r.num("swiglu_alpha", 1.702), limit: r.num("swiglu_limit", 7) },
      };
    case "deepseek2": {
      const method = r.j.topk_method ?? "greedy";
      if (method !== "greedy")
        throw new ConfigError(
          "bad-config",
          `DeepSeek topk_method ${JSON.stringify(method)} is not supported (only "greedy")`,
          { file: r.file, key: "topk_method", value: method },
        );
      const F = r.int("moe_intermediate_size");
      return {
        numExperts: r.int("n_routed_experts"),
        topK: r.int("num_experts_per_tok"),
        normTopKProb: r.bool("norm_topk_prob", false),
        expertIntermediateSize: F,
        routing: "softmax-topk",
        routedScale: r.num("routed_scaling_factor", 1),
        sharedIntermediateSize: F * r.int("n_shared_experts", 0),
        firstDenseLayers: r.int("first_k_dense_replace", 0),
        clampedSwiglu: null,
      };
    }
    default:
      return null;
  }
}

/** Reads and parses `<folder>/config.json` (or a config file path). */
export function readHFConfig(folderOrFile: string): ModelConfig {
  const file =
    fs.existsSync(folderOrFile) && fs.statSync(folderOrFile).isDirectory()
      ? path.join(folderOrFile, "config.json")
      : folderOrFile;
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (cause) {
    throw new ConfigError("bad-json", `cannot read config: ${(cause as Error).message}`, { file }, { cause });
  }
  return parseHFConfig(json, file);
}

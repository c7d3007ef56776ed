// Converts a Hugging Face Llama folder (safetensors, byte-level BPE tokenizer.json) to a GGUF file,
// following llama.cpp's convert_hf_to_gguf.py for `llama`, so `poot` users need only Node to make one.
import * as fs from "node:fs";
import * as path from "node:path";
import { readHFConfig } from "./config-hf.js";
import { ConfigError, ModelError, TokenizerError } from "./errors.js";
import { llamaQKRowOrder } from "./gguf-permute.js";
import { encodeGGUFHeader, type GGUFWriteTensor, type GGUFWriteValue } from "./gguf-writer.js";
import { QUANT_FORMATS } from "./quant/registry.js";
import { openSafetensors } from "./safetensors.js";

/** Options of {@link convertLlamaToGGUF}. */
export interface ConvertLlamaOptions {
  /** `general.name` (default: the folder's base name). */
  readonly name?: string;
}

/** What {@link convertLlamaToGGUF} wrote. */
export interface ConvertLlamaResult {
  /** The output path. */
  readonly path: string;
  /** File size in bytes. */
  readonly bytes: number;
  /** Number of tensors written. */
  readonly tensors: number;
}

/** llama.cpp's `general.file_type` LlamaFileType values of the storage types this converter keeps. */
const FILE_TYPE = { F32: 0, F16: 1, BF16: 32 } as const;
/** llama.cpp token types: NORMAL and CONTROL. */
const NORMAL = 1,
  CONTROL = 3;

const LAYER_NAMES: Readonly<Record<string, string>> = {
  "input_layernorm.weight": "attn_norm.weight",
  "self_attn.q_proj.weight": "attn_q.weight",
  "self_attn.k_proj.weight": "attn_k.weight",
  "self_attn.v_proj.weight": "attn_v.weight",
  "self_attn.o_proj.weight": "attn_output.weight",
  "post_attention_layernorm.weight": "ffn_norm.weight",
  "mlp.gate_proj.weight": "ffn_gate.weight",
  "mlp.up_proj.weight": "ffn_up.weight",
  "mlp.down_proj.weight": "ffn_down.weight",
};

function ggufName(hf: string, file: string): string {
  if (hf === "model.embed_tokens.weight") return "token_embd.weight";
  if (hf === "model.norm.weight") return "output_norm.weight";
  if (hf === "lm_head.weight") return "output.weight";
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(hf);
  const g = m === null ? undefined : LAYER_NAMES[m[2]!];
  if (m === null || g === undefined)
    throw new ModelError("bad-header", "tensor has no llama GGUF name (biases and extra weights are not supported)", {
      file,
      tensor: hf,
    });
  return `blk.${m[1]}.${g}`;
}

function readJson(file: string): Record<string, unknown> {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, unknown>;
  } catch (cause) {
    throw new ModelError("bad-json", `cannot read JSON: ${(cause as Error).message}`, { file }, { cause });
  }
}

/** The `tokenizer.ggml.*` keys of a byte-level BPE tokenizer.json (ids must be contiguous). */
function tokenizerMetadata(dir: string, vocabSize: number): Record<string, GGUFWriteValue> {
  const file = path.join(dir, "tokenizer.json");
  const tok = readJson(file) as {
    model?: { type?: string; vocab?: Record<string, number>; merges?: (string | [string, string])[] };
    added_tokens?: { id: number; content: string; special?: boolean }[];
  };
  if (tok.model?.type !== "BPE" || tok.model.vocab === undefined || tok.model.merges === undefined)
    throw new TokenizerError("tokenizer", "only BPE tokenizer.json files with a vocab and merges are supported", {
      file,
      key: "model.type",
      value: String(tok.model?.type),
    });
  const tokens: (string | undefined)[] = new Array<string | undefined>(vocabSize).fill(undefined);
  for (const [t, id] of Object.entries(tok.model.vocab)) tokens[id] = t;
  const special = new Set<number>();
  for (const a of tok.added_tokens ?? []) {
    tokens[a.id] = a.content;
    if (a.special === true) special.add(a.id);
  }
  const missing = tokens.findIndex((t) => t === undefined);
  if (missing >= 0 || tokens.length !== vocabSize)
    throw new TokenizerError("tokenizer", "vocabulary ids are not contiguous up to vocab_size", {
      file,
      key: "model.vocab",
      value: missing,
    });
  return {
    "tokenizer.ggml.model": { type: "string", value: "gpt2" },
    // The demo tokenizer splits like Llama 3; llama.cpp names that pre-tokenizer `llama-bpe`.
    "tokenizer.ggml.pre": { type: "string", value: "llama-bpe" },
    "tokenizer.ggml.tokens": { type: "array", elem: "string", value: tokens as string[] },
    "tokenizer.ggml.token_type": {
      type: "array",
      elem: "i32",
      value: tokens.map((_, i) => (special.has(i) ? CONTROL : NORMAL)),
    },
    "tokenizer.ggml.merges": {
      type: "array",
      elem: "string",
      value: tok.model.merges.map((m) => (typeof m === "string" ? m : m.join(" "))),
    },
  };
}

/**
 * Writes `outPath` as a GGUF v3 `llama` file from the Hugging Face folder `hfDir` (config.json, one
 * model.safetensors, tokenizer.json, tokenizer_config.json). Matrices keep their storage type (bf16, f16,
 * f32), norm vectors become f32 and Q/K rows take llama.cpp's interleaved rotary order, with metadata keys
 * and tensor order as llama.cpp's `gguf` writer emits them. Plain-RoPE Llama models without biases only.
 */
export function convertLlamaToGGUF(
  hfDir: string,
  outPath: string,
  options: ConvertLlamaOptions = {},
): ConvertLlamaResult {
  const cfgFile = path.join(hfDir, "config.json");
  const c = readHFConfig(cfgFile);
  if (c.architecture !== "llama")
    throw new ConfigError("unknown-architecture", "only llama models convert", {
      file: cfgFile,
      key: "architectures",
      value: c.sourceArchitecture,
    });
  if (c.rope.scaling !== null || c.rope.rotaryDim !== c.headDim || c.attentionBias)
    throw new ConfigError("bad-config", "only plain RoPE without attention bias converts", {
      file: cfgFile,
      key: "rope_scaling",
    });
  const tcfg = readJson(path.join(hfDir, "tokenizer_config.json"));
  const ck = openSafetensors(hfDir);
  try {
    const names = ck
      .tensors()
      .map((t) => t.name)
      .filter((n) => !(n === "lm_head.weight" && c.tieWordEmbeddings));
    // convert_hf_to_gguf's order: non-layer tensors first, each group sorted by name.
    names.sort((a, b) => Number(a.includes("layers")) - Number(b.includes("layers")) || (a < b ? -1 : a > b ? 1 : 0));
    const dtypes = new Set(names.filter((n) => ck.info(n).shape.length > 1).map((n) => ck.info(n).dtype));
    const matType = dtypes.size === 1 ? [...dtypes][0]! : "mixed";
    if (!(matType === "BF16" || matType === "F16" || matType === "F32"))
      throw new ModelError("unsupported-dtype", "matrices must all be BF16, F16 or F32", {
        file: ck.path,
        value: [...dtypes].join(","),
      });
    const u32 = (value: number): GGUFWriteValue => ({ type: "u32", value });
    const metadata: Record<string, GGUFWriteValue> = {
      "general.architecture": { type: "string", value: "llama" },
      "general.name": { type: "string", value: options.name ?? path.basename(path.resolve(hfDir)) },
      "llama.context_length": u32(c.maxPositions),
      "llama.embedding_length": u32(c.hiddenSize),
      "llama.block_count": u32(c.numLayers),
      "llama.feed_forward_length": u32(c.intermediateSize),
      "llama.rope.dimension_count": u32(c.headDim),
      "llama.attention.head_count": u32(c.numHeads),
      "llama.attention.head_count_kv": u32(c.numKVHeads),
      "llama.attention.layer_norm_rms_epsilon": { type: "f32", value: c.rmsNormEps },
      "llama.rope.freq_base": { type: "f32", value: c.rope.theta },
      "llama.vocab_size": u32(c.vocabSize),
      "general.file_type": u32(FILE_TYPE[matType]),
      ...tokenizerMetadata(hfDir, c.vocabSize),
      "tokenizer.ggml.bos_token_id": u32(c.bosTokenId ?? 0),
      "tokenizer.ggml.eos_token_id": u32(c.eosTokenIds[0] ?? 0),
      "tokenizer.ggml.add_bos_token": { type: "bool", value: tcfg.add_bos_token !== false },
      "tokenizer.ggml.add_eos_token": { type: "bool", value: tcfg.add_eos_token === true },
    };
    if (typeof tcfg.chat_template === "string")
      metadata["tokenizer.chat_template"] = { type: "string", value: tcfg.chat_template };
    const tensors: GGUFWriteTensor[] = names.map((n) => {
      const shape = ck.info(n).shape;
      // ggml dims run fastest first; llama.cpp keeps 1-D norm weights in F32.
      return {
        name: ggufName(n, ck.path),
        ggmlDims: [...shape].reverse(),
        format: shape.length === 1 ? QUANT_FORMATS.F32 : QUANT_FORMATS[matType],
      };
    });
    const enc = encodeGGUFHeader(metadata, tensors);
    const out = new Uint8Array(enc.header.length + enc.dataLength);
    out.set(enc.header);
    names.forEach((n, i) => {
      const info = ck.info(n);
      let data = info.shape.length === 1 ? new Uint8Array(ck.readF32Sync(n).buffer) : ck.readSync(n);
      const heads = n.endsWith("q_proj.weight") ? c.numHeads : n.endsWith("k_proj.weight") ? c.numKVHeads : 0;
      if (heads > 0) data = permuteRows(data, llamaQKRowOrder(heads, c.headDim), data.byteLength / info.shape[0]!);
      out.set(data, enc.header.length + enc.placements[i]!.offset);
    });
    fs.mkdirSync(path.dirname(path.resolve(outPath)), { recursive: true });
    fs.writeFileSync(outPath, out);
    return { path: outPath, bytes: out.byteLength, tensors: tensors.length };
  } finally {
    ck.close();
  }
}

/** GGUF row g takes HF row order[g] (rows of `rowBytes` bytes). */
function permuteRows(data: Uint8Array, order: Int32Array, rowBytes: number): Uint8Array {
  const out = new Uint8Array(data.byteLength);
  for (let g = 0; g < order.length; g++)
    out.set(data.subarray(order[g]! * rowBytes, (order[g]! + 1) * rowBytes), g * rowBytes);
  return out;
}

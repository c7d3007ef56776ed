#!/usr/bin/env node
// Writes a Llama-3.2-1B-shaped Hugging Face folder with random bf16 weights: config.json (the real model's),
// model.safetensors, tokenizer.json and tokenizer_config.json. Deterministic (same seed, same bytes), fast
// (one xorshift call per two weights, no float math) and dependency-free, so it runs with a bare Node binary
// on the GPU machine:   node tools/random-model/make-hf.mjs --out /tmp/llama-1b-random [--seed 1] [--shape small|tiny]
//
// Weights: bf16 values with a random sign and magnitude in [2^-9, 2^-5) (exponent chosen uniformly from four
// binades, 7 random mantissa bits), std about 0.011; RMSNorm weights are 1. Embeddings are tied (no lm_head).
// The tokenizer is byte-level BPE without merges: ids 0-255 are the 256 bytes, 256-127999 fillers, and
// 128000-128255 Llama 3's special tokens, so any text encodes and any id decodes.
import * as fs from "node:fs";
import * as path from "node:path";

/** config.json of meta-llama/Llama-3.2-1B (transformers 4.45). */
const LLAMA_3_2_1B = {
  architectures: ["LlamaForCausalLM"],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 128000,
  eos_token_id: 128001,
  head_dim: 64,
  hidden_act: "silu",
  hidden_size: 2048,
  initializer_range: 0.02,
  intermediate_size: 8192,
  max_position_embeddings: 131072,
  mlp_bias: false,
  model_type: "llama",
  num_attention_heads: 32,
  num_hidden_layers: 16,
  num_key_value_heads: 8,
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  rope_scaling: {
    factor: 32.0,
    high_freq_factor: 4.0,
    low_freq_factor: 1.0,
    original_max_position_embeddings: 8192,
    rope_type: "llama3",
  },
  rope_theta: 500000.0,
  tie_word_embeddings: true,
  torch_dtype: "bfloat16",
  transformers_version: "4.45.0.dev0",
  use_cache: true,
  vocab_size: 128256,
};
/** The same architecture at toy size (for checking the script and the loaders on a CPU). */
const TINY = {
  ...LLAMA_3_2_1B,
  head_dim: 16,
  hidden_size: 64,
  intermediate_size: 128,
  num_attention_heads: 4,
  num_hidden_layers: 2,
  num_key_value_heads: 2,
};
/** Small but with the real head size and rows that are multiples of 256 (the GPU kernels' vector paths), for comparing backends. */
const SMALL = {
  ...LLAMA_3_2_1B,
  hidden_size: 256,
  intermediate_size: 1024,
  num_attention_heads: 4,
  num_hidden_layers: 2,
  num_key_value_heads: 2,
};
const SHAPES = { "llama-3.2-1b": LLAMA_3_2_1B, small: SMALL, tiny: TINY };

function parseArgs(argv) {
  const o = { out: null, seed: 1, shape: "llama-3.2-1b" };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i],
      v = argv[i + 1];
    if (a === "--out" && v !== undefined) (o.out = v), i++;
    else if (a === "--seed" && v !== undefined && /^\d+$/.test(v)) (o.seed = Number(v)), i++;
    else if (a === "--shape" && v !== undefined && Object.hasOwn(SHAPES, v)) (o.shape = v), i++;
    else
      throw new Error(
        `make-hf: bad argument ${JSON.stringify(a)} (usage: --out DIR [--seed N] [--shape ${Object.keys(SHAPES).join("|")}])`,
      );
  }
  if (o.out === null) throw new Error("make-hf: --out DIR is required");
  return o;
}

/** The checkpoint's tensors in Hugging Face names and order, with shapes and how to fill them. */
function tensorsOf(c) {
  const H = c.hidden_size,
    D = c.head_dim,
    F = c.intermediate_size;
  const t = [{ name: "model.embed_tokens.weight", shape: [c.vocab_size, H], fill: "random" }];
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}.`;
    t.push(
      { name: `${p}input_layernorm.weight`, shape: [H], fill: "one" },
      { name: `${p}self_attn.q_proj.weight`, shape: [c.num_attention_heads * D, H], fill: "random" },
      { name: `${p}self_attn.k_proj.weight`, shape: [c.num_key_value_heads * D, H], fill: "random" },
      { name: `${p}self_attn.v_proj.weight`, shape: [c.num_key_value_heads * D, H], fill: "random" },
      { name: `${p}self_attn.o_proj.weight`, shape: [H, c.num_attention_heads * D], fill: "random" },
      { name: `${p}post_attention_layernorm.weight`, shape: [H], fill: "one" },
      { name: `${p}mlp.gate_proj.weight`, shape: [F, H], fill: "random" },
      { name: `${p}mlp.up_proj.weight`, shape: [F, H], fill: "random" },
      { name: `${p}mlp.down_proj.weight`, shape: [H, F], fill: "random" },
    );
  }
  t.push({ name: "model.norm.weight", shape: [H], fill: "one" });
  return t;
}

/** FNV-1a of a string: each tensor's stream is seeded by its name, so tensors do not depend on their order. */
function fnv1a(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** Fills `out` (bf16 bits) from xorshift32 `state`; returns the next state. Two weights per call. */
function fillRandom(out, state) {
  let x = state;
  const n = out.length;
  for (let i = 0; i < n; i += 2) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const lo = x & 0xffff,
      hi = x >>> 16;
    // sign | exponent 118..121 (2^-9 .. 2^-6 binades) | 7 mantissa bits
    out[i] = (lo & 0x8000) | ((118 + ((lo >>> 7) & 3)) << 7) | (lo & 0x7f);
    if (i + 1 < n) out[i + 1] = (hi & 0x8000) | ((118 + ((hi >>> 7) & 3)) << 7) | (hi & 0x7f);
  }
  return x >>> 0;
}

function writeSafetensors(file, tensors, seed) {
  let offset = 0;
  const header = { __metadata__: { format: "pt", generator: `poot tools/random-model/make-hf.mjs seed ${seed}` } };
  for (const t of tensors) {
    const bytes = 2 * t.shape.reduce((a, b) => a * b, 1);
    header[t.name] = { dtype: "BF16", shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - ((8 + json.length) % 8)) % 8);
  const fd = fs.openSync(file, "w");
  try {
    const lead = Buffer.alloc(8);
    lead.writeBigUInt64LE(BigInt(json.length));
    fs.writeSync(fd, lead);
    fs.writeSync(fd, json);
    const chunk = new Uint16Array(1 << 25); // 64 MiB
    for (const t of tensors) {
      let left = t.shape.reduce((a, b) => a * b, 1);
      let state = (fnv1a(t.name) ^ Math.imul(seed, 0x9e3779b9)) >>> 0 || 1;
      while (left > 0) {
        const n = Math.min(left, chunk.length);
        const view = chunk.subarray(0, n);
        if (t.fill === "one") view.fill(0x3f80);
        else state = fillRandom(view, state);
        fs.writeSync(fd, new Uint8Array(view.buffer, 0, 2 * n));
        left -= n;
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  return 8 + json.length + offset;
}

/** GPT-2's byte -> printable character map (byte-level BPE). */
function byteChars() {
  const keep = [];
  for (let b = 33; b <= 126; b++) keep.push(b);
  for (let b = 161; b <= 172; b++) keep.push(b);
  for (let b = 174; b <= 255; b++) keep.push(b);
  const map = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) map[b] = keep.includes(b) ? String.fromCharCode(b) : String.fromCharCode(256 + extra++);
  return map;
}

function tokenizerFiles(c) {
  const vocab = {};
  byteChars().forEach((ch, i) => (vocab[ch] = i));
  for (let i = 256; i < 128000; i++) vocab[`<filler_${i}>`] = i;
  const named = {
    128000: "<|begin_of_text|>",
    128001: "<|end_of_text|>",
    128006: "<|start_header_id|>",
    128007: "<|end_header_id|>",
    128009: "<|eot_id|>",
  };
  const added = [];
  for (let id = 128000, r = 0; id < c.vocab_size; id++) {
    const content = named[id] ?? `<|reserved_special_token_${r++}|>`;
    added.push({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  }
  const tokenizer = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: {
      type: "TemplateProcessing",
      single: [{ SpecialToken: { id: "<|begin_of_text|>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
      pair: [
        { SpecialToken: { id: "<|begin_of_text|>", type_id: 0 } },
        { Sequence: { id: "A", type_id: 0 } },
        { Sequence: { id: "B", type_id: 1 } },
      ],
      special_tokens: {
        "<|begin_of_text|>": { id: "<|begin_of_text|>", ids: [128000], tokens: ["<|begin_of_text|>"] },
      },
    },
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: [],
    },
  };
  const config = {
    add_bos_token: true,
    add_eos_token: false,
    bos_token: "<|begin_of_text|>",
    eos_token: "<|end_of_text|>",
    clean_up_tokenization_spaces: true,
    model_max_length: 131072,
    tokenizer_class: "PreTrainedTokenizerFast",
  };
  return { tokenizer, config };
}

const o = parseArgs(process.argv.slice(2));
const config = SHAPES[o.shape];
const t0 = performance.now();
fs.mkdirSync(o.out, { recursive: true });
fs.writeFileSync(path.join(o.out, "config.json"), `${JSON.stringify(config, null, 2)}\n`);
const tok = tokenizerFiles(config);
fs.writeFileSync(path.join(o.out, "tokenizer.json"), JSON.stringify(tok.tokenizer));
fs.writeFileSync(path.join(o.out, "tokenizer_config.json"), `${JSON.stringify(tok.config, null, 2)}\n`);
const tensors = tensorsOf(config);
const bytes = writeSafetensors(path.join(o.out, "model.safetensors"), tensors, o.seed);
console.log(
  `make-hf: ${o.shape} seed ${o.seed}: ${tensors.length} tensors, ${(bytes / 1e9).toFixed(3)} GB in ${((performance.now() - t0) / 1000).toFixed(1)} s -> ${o.out}`,
);

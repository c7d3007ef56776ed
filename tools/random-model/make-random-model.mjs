// Writes a Llama-3.2-1B-shaped GGUF with deterministic random weights (F16, Q8_0 or Q4_K_M) for CPU benchmarks.
// The header comes from @poot/models' GGUF writer; packed blocks are random codes with scales chosen for std ≈ 0.02.
//
// usage: node tools/random-model/make-random-model.mjs [--type F16|Q8_0|Q4_K_M|all] [--out-dir DIR] [--seed N]
// (build @poot/models first: `pnpm turbo run build --filter=@poot/models`)
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const here = path.dirname(fileURLToPath(import.meta.url));
const modelsDist = path.resolve(here, "../../packages/models/dist/index.js");
if (!fs.existsSync(modelsDist)) {
  console.error(`${modelsDist} is missing: run \`pnpm turbo run build --filter=@poot/models\` first`);
  process.exit(2);
}
const { QUANT_FORMATS, encodeGGUFHeader } = await import(pathToFileURL(modelsDist).href);

/** Llama-3.2-1B's shape (HF config.json of meta-llama/Llama-3.2-1B). */
export const SHAPE = {
  hidden: 2048,
  layers: 16,
  heads: 32,
  kvHeads: 8,
  headDim: 64,
  ffn: 8192,
  vocab: 128256,
  context: 131072,
  rmsEps: 1e-5,
  ropeTheta: 500000,
  rope: { factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalContext: 8192 },
  bos: 128000,
  eos: 128009,
  eot: 128009,
  endOfText: 128001,
};

const USAGE =
  "usage: node tools/random-model/make-random-model.mjs [--type F16|Q8_0|Q4_K_M|all] [--out-dir DIR] [--seed N]";
let flags;
try {
  flags = parseArgs({
    options: {
      type: { type: "string", default: "all" },
      "out-dir": { type: "string" },
      seed: { type: "string", default: "1" },
      help: { type: "boolean" },
    },
  }).values;
} catch (e) {
  console.error(`${e.message}\n${USAGE}`);
  process.exit(2);
}
if (flags.help) {
  console.log(USAGE);
  process.exit(0);
}
const TYPES = ["F16", "Q8_0", "Q4_K_M"];
const types = flags.type === "all" ? TYPES : [flags.type];
for (const t of types)
  if (!TYPES.includes(t)) {
    console.error(`--type must be one of ${TYPES.join(", ")} or all, not ${t}`);
    process.exit(2);
  }
const outDir = path.resolve(flags["out-dir"] ?? path.join(os.tmpdir(), "poot-random-model"));
if (!/^\d+$/.test(flags.seed)) {
  console.error(`--seed must be a non-negative integer, not ${flags.seed}`);
  process.exit(2);
}
const seed = Number(flags.seed) >>> 0;

/** A seeded 32-bit generator (xorshift128), so every run writes the same bytes. */
function rng(s) {
  let a = s ^ 0x9e3779b9,
    b = Math.imul(s, 0x85ebca6b) ^ 0x2545f491,
    c = 0x6a09e667,
    d = 0xbb67ae85;
  const next = () => {
    const t = a ^ (a << 11);
    a = b;
    b = c;
    c = d;
    d = (d ^ (d >>> 19) ^ t ^ (t >>> 8)) >>> 0;
    return d;
  };
  for (let i = 0; i < 16; i++) next();
  return next;
}

/** f16 bits of a positive finite number (round to nearest; subnormals kept). */
function f16(x) {
  const f = new Float32Array([x]),
    u = new Uint32Array(f.buffer)[0];
  const e = ((u >>> 23) & 0xff) - 127 + 15;
  if (e >= 31) return 0x7bff;
  if (e <= 0) return Math.round(x / 2 ** -24) & 0x3ff;
  const m = (u & 0x7fffff) + 0x1000; // round half up on the dropped 13 bits
  return ((e << 10) + (m >>> 13)) & 0xffff;
}

// Per-format block fix-ups: random codes stay; scale fields get values that give weights of std ≈ 0.02.
// Q8_0: d·q, q uniform int8 (std 73.6). Q4_K: d·sc·q − dmin·m, sc, m 6-bit, q 4-bit (dmin = 7.5 d centres it).
// Q6_K: d·sc·(q − 32), sc int8 in 16..47, q 6-bit (std 18.5). F16: sign, exponent 2^-9..2^-5, random mantissa.
const put16 = (buf, at, v) => {
  buf[at] = v & 0xff;
  buf[at + 1] = v >>> 8;
};
const FIX = {
  F16(buf, next) {
    for (let o = 0; o < buf.length; o += 2) {
      const r = next();
      put16(buf, o, (r & 0x83ff) | ((6 + ((r >>> 16) % 5)) << 10));
    }
  },
  Q8_0(buf, next) {
    for (let o = 0; o < buf.length; o += 34) put16(buf, o, f16(2.7e-4 * (0.75 + (next() & 0xff) / 512)));
  },
  Q4_K(buf, next) {
    for (let o = 0; o < buf.length; o += 144) {
      const d = 1.0e-4 * (0.75 + (next() & 0xff) / 512);
      put16(buf, o, f16(d));
      put16(buf, o + 2, f16(7.5 * d));
    }
  },
  Q6_K(buf, next) {
    for (let o = 0; o < buf.length; o += 210) {
      for (let j = 0; j < 16; j++) buf[o + 192 + j] = 16 + (buf[o + 192 + j] & 31);
      put16(buf, o + 208, f16(3.4e-5 * (0.75 + (next() & 0xff) / 512)));
    }
  },
};

/** llama-quantize's use_more_bits: the layers whose attn_v / ffn_down get Q6_K in Q4_K_M. */
const moreBits = (i, n) => i < n / 8 || i >= (7 * n) / 8 || (i - Math.floor(n / 8)) % 3 === 2;

/** Tensor directory of one file type (ggml dims fastest first: a [out, in] weight is [in, out]). */
function tensorsOf(type) {
  const { hidden: H, layers: L, heads, kvHeads, headDim: D, ffn: I, vocab: V } = SHAPE;
  const F = QUANT_FORMATS;
  const mat = (role, layer) => {
    if (type === "F16") return F.F16;
    if (type === "Q8_0") return F.Q8_0;
    if (role === "embd" || ((role === "attn_v" || role === "ffn_down") && moreBits(layer, L))) return F.Q6_K;
    return F.Q4_K;
  };
  const t = [
    { name: "token_embd.weight", ggmlDims: [H, V], format: mat("embd", 0) },
    { name: "rope_freqs.weight", ggmlDims: [D / 2], format: F.F32 },
  ];
  for (let i = 0; i < L; i++) {
    const b = `blk.${i}.`;
    t.push(
      { name: `${b}attn_norm.weight`, ggmlDims: [H], format: F.F32 },
      { name: `${b}attn_q.weight`, ggmlDims: [H, heads * D], format: mat("other", i) },
      { name: `${b}attn_k.weight`, ggmlDims: [H, kvHeads * D], format: mat("other", i) },
      { name: `${b}attn_v.weight`, ggmlDims: [H, kvHeads * D], format: mat("attn_v", i) },
      { name: `${b}attn_output.weight`, ggmlDims: [heads * D, H], format: mat("other", i) },
      { name: `${b}ffn_norm.weight`, ggmlDims: [H], format: F.F32 },
      { name: `${b}ffn_gate.weight`, ggmlDims: [H, I], format: mat("other", i) },
      { name: `${b}ffn_up.weight`, ggmlDims: [H, I], format: mat("other", i) },
      { name: `${b}ffn_down.weight`, ggmlDims: [I, H], format: mat("ffn_down", i) },
    );
  }
  t.push({ name: "output_norm.weight", ggmlDims: [H], format: F.F32 });
  return t;
}

/** llama3 rope scaling baked into per-frequency divisors, as convert_hf_to_gguf.py writes `rope_freqs`. */
function ropeFreqs() {
  const { headDim: D, ropeTheta, rope: r } = SHAPE;
  const lowWave = r.originalContext / r.lowFreqFactor,
    highWave = r.originalContext / r.highFreqFactor;
  return Float32Array.from({ length: D / 2 }, (_, i) => {
    const wave = (2 * Math.PI) / (1 / ropeTheta ** ((2 * i) / D));
    if (wave < highWave) return 1;
    if (wave > lowWave) return r.factor;
    const smooth = (r.originalContext / wave - r.lowFreqFactor) / (r.highFreqFactor - r.lowFreqFactor);
    return 1 / ((1 - smooth) / r.factor + smooth);
  });
}

/**
 * A byte-level BPE vocabulary of Llama 3's size: the 256 byte symbols (GPT-2's byte-to-unicode map), every pair
 * and then triples of 54 common symbols (letters, space `Ġ`, newline `Ċ`) with the merges that build them, and
 * Llama 3's 256 special tokens. Real text tokenizes with it; the ids mean nothing (the weights are random).
 */
function vocabulary() {
  const byteSym = [];
  for (let b = 0, n = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    byteSym.push(String.fromCodePoint(printable ? b : 256 + n++));
  }
  const tokens = [...byteSym],
    merges = [];
  const common = [..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "Ġ", "Ċ"];
  const have = new Set(tokens);
  const add = (a, b) => {
    if (tokens.length >= SHAPE.bos || have.has(a + b)) return;
    tokens.push(a + b), have.add(a + b), merges.push(`${a} ${b}`);
  };
  for (const a of common) for (const b of common) add(a, b);
  for (const a of common) for (const b of common) for (const c of common) add(a + b, c);
  const special = [
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>",
    "<|finetune_right_pad_id|>",
    "<|reserved_special_token_2|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eom_id|>",
    "<|eot_id|>",
    "<|python_tag|>",
  ];
  for (let i = 0; tokens.length < SHAPE.vocab; i++) tokens.push(special[i] ?? `<|reserved_special_token_${i - 8}|>`);
  const types = tokens.map((_, i) => (i >= SHAPE.bos ? 3 : 1));
  return { tokens, merges, types };
}

const CHAT_TEMPLATE =
  "{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}";

function metadataOf(type, vocab) {
  const s = (value) => ({ type: "string", value }),
    u32 = (value) => ({ type: "u32", value }),
    f32 = (value) => ({ type: "f32", value });
  const c = SHAPE;
  return {
    "general.architecture": s("llama"),
    "general.name": s(`random Llama-3.2-1B-shaped benchmark model (${type}, seed ${seed})`),
    "general.file_type": u32({ F16: 1, Q8_0: 7, Q4_K_M: 15 }[type]),
    "general.quantization_version": u32(2),
    "llama.vocab_size": u32(c.vocab),
    "llama.context_length": u32(c.context),
    "llama.embedding_length": u32(c.hidden),
    "llama.block_count": u32(c.layers),
    "llama.feed_forward_length": u32(c.ffn),
    "llama.attention.head_count": u32(c.heads),
    "llama.attention.head_count_kv": u32(c.kvHeads),
    "llama.attention.layer_norm_rms_epsilon": f32(c.rmsEps),
    "llama.attention.key_length": u32(c.headDim),
    "llama.attention.value_length": u32(c.headDim),
    "llama.rope.freq_base": f32(c.ropeTheta),
    "llama.rope.dimension_count": u32(c.headDim),
    "tokenizer.ggml.model": s("gpt2"),
    "tokenizer.ggml.pre": s("llama-bpe"),
    "tokenizer.ggml.tokens": { type: "array", elem: "string", value: vocab.tokens },
    "tokenizer.ggml.token_type": { type: "array", elem: "i32", value: vocab.types },
    "tokenizer.ggml.merges": { type: "array", elem: "string", value: vocab.merges },
    "tokenizer.ggml.bos_token_id": u32(c.bos),
    "tokenizer.ggml.eos_token_id": u32(c.eos),
    "tokenizer.ggml.add_bos_token": { type: "bool", value: true },
    "tokenizer.chat_template": s(CHAT_TEMPLATE),
  };
}

/** Streams one file: header, then each tensor's random blocks (aligned), in chunks. */
function writeModel(type, vocab) {
  const t0 = performance.now();
  const tensors = tensorsOf(type);
  const enc = encodeGGUFHeader(metadataOf(type, vocab), tensors);
  const file = path.join(outDir, `llama-3.2-1b-random-${type}.gguf`);
  // Written beside the target and renamed when complete: a reader (the bench, another engineer's run) never
  // opens a half-written file, and two writers at once each finish their own copy.
  const partial = `${file}.${process.pid}.partial`;
  const fd = fs.openSync(partial, "w");
  fs.writeSync(fd, enc.header);
  let pos = enc.header.length;
  const next = rng(seed * 7919 + TYPES.indexOf(type));
  const CHUNK = 16 << 20;
  tensors.forEach((t, i) => {
    const pl = enc.placements[i],
      start = enc.header.length + pl.offset;
    if (start > pos) fs.writeSync(fd, new Uint8Array(start - pos));
    if (t.format.name === "F32") {
      const v =
        t.name === "rope_freqs.weight"
          ? ropeFreqs()
          : Float32Array.from({ length: pl.byteLength / 4 }, () => 1 + ((next() % 201) - 100) / 1000);
      fs.writeSync(fd, new Uint8Array(v.buffer));
    } else {
      const bb = t.format.blockBytes;
      for (let left = pl.byteLength; left > 0; ) {
        const n = Math.min(left, Math.floor(CHUNK / bb) * bb);
        const buf = new Uint8Array(Math.ceil(n / 4) * 4),
          words = new Uint32Array(buf.buffer);
        for (let k = 0; k < words.length; k++) words[k] = next();
        FIX[t.format.name](buf.subarray(0, n), next);
        fs.writeSync(fd, buf, 0, n);
        left -= n;
      }
    }
    pos = start + pl.byteLength;
  });
  fs.closeSync(fd);
  fs.renameSync(partial, file);
  const counts = {};
  for (const t of tensors) counts[t.format.name] = (counts[t.format.name] ?? 0) + 1;
  const size = fs.statSync(file).size;
  console.log(
    `${file}: ${size} bytes (${(size / 2 ** 20).toFixed(1)} MiB), ${tensors.length} tensors ${JSON.stringify(counts)}, ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
}

fs.mkdirSync(outDir, { recursive: true });
const vocab = vocabulary();
for (const t of types) writeModel(t, vocab);

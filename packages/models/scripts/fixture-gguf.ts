// Regenerates the GGUF test fixtures that the repository does not store (fixtures/generated.json lists them):
// the F32, F16 and Q8_0 files of the `llama` and `qwen3` fixture families, byte for byte as the fixture tool
// (fixtures/tools/hf2gguf.py, numpy + ggml_quantize_chunk) wrote them, through this package's GGUF writer.
// Key order, token types, rope_freqs and type choice follow that tool; only what these families use is ported.
import * as fs from "node:fs";
import * as path from "node:path";
import { createHash } from "node:crypto";
// Module imports, not the package index: the script then runs with no other workspace package built.
import { llamaQKRowOrder } from "../src/gguf-permute.js";
import { encodeGGUFHeader, type GGUFWriteValue } from "../src/gguf-writer.js";
import { QUANT_FORMATS } from "../src/quant/registry.js";
import { openSafetensors } from "../src/safetensors.js";

/** The storage types this regenerator writes (llama.cpp `general.file_type` values). */
const FILE_TYPE = { F32: 0, F16: 1, Q8_0: 7 } as const;

/** One regenerated file, as fixtures/generated.json records it. */
export interface GeneratedFixture {
  /** Path of the file under fixtures/. */
  readonly path: string;
  /** The HF-layout source folder under fixtures/ (config.json, tokenizer.json). */
  readonly source: string;
  /** The weights file inside `source` (float32 or bf16 safetensors holding bf16-exact values). */
  readonly weights: string;
  /** Storage type of the matrices. */
  readonly type: keyof typeof FILE_TYPE;
  /** `general.name`. */
  readonly name: string;
  /** Size of the original file in bytes. */
  readonly bytes: number;
  /** sha256 (hex) of the original file. */
  readonly sha256: string;
  /**
   * The fixture tool's llama3 RoPE factors, where they differ from this file's: numpy's float32 power is not
   * correctly rounded (one ulp off at one frequency, three ulps after the smoothing), which JavaScript cannot
   * reproduce. Each must agree with the computed value to 1e-6 relative, so the record cannot hide a wrong formula.
   */
  readonly ropeFreqs?: readonly number[];
}

type Json = Record<string, unknown>;

function readJson(file: string): Json {
  return JSON.parse(fs.readFileSync(file, "utf8")) as Json;
}

/** (theta, rope parameters) as hf2gguf's rope_params reads them (transformers >= 5 or the older keys). */
function ropeParams(cfg: Json, layerType?: string): [number, Json] {
  let rp = cfg["rope_parameters"] as Json | undefined;
  if (rp !== undefined && rp !== null && Object.keys(rp).length > 0) {
    if (layerType !== undefined && typeof rp[layerType] === "object" && rp[layerType] !== null)
      rp = rp[layerType] as Json;
    else if (!("rope_theta" in rp) && typeof rp["full_attention"] === "object" && rp["full_attention"] !== null)
      rp = rp["full_attention"] as Json;
    return [Number(rp["rope_theta"] ?? 10000), rp];
  }
  return [Number(cfg["rope_theta"] ?? 10000), (cfg["rope_scaling"] as Json | null) ?? {}];
}

/** llama3 RoPE frequency factors, in float32 as numpy 2 computes them. */
function llama3RopeFactors(cfg: Json, headDim: number): Float32Array {
  const [theta, rs] = ropeParams(cfg);
  const factor = Number(rs["factor"] ?? 8),
    lo = Number(rs["low_freq_factor"] ?? 1),
    hi = Number(rs["high_freq_factor"] ?? 4);
  const old = Number(rs["original_max_position_embeddings"] ?? 8192);
  const f = Math.fround,
    out = new Float32Array(headDim / 2);
  const loWl = old / lo,
    hiWl = old / hi;
  for (let i = 0; i < headDim / 2; i++) {
    const freq = f(1 / f(Math.pow(theta, f(f(2 * i) / headDim))));
    const wl = f(f(2 * Math.PI) / freq);
    if (wl < hiWl) out[i] = 1;
    else if (wl > loWl) out[i] = factor;
    else {
      // numpy keeps float32 throughout (Python scalars are weak under NEP 50): round every step.
      const sm = f(f(f(old / wl) - lo) / f(hi - lo));
      out[i] = f(1 / f(f(f(1 - sm) / factor) + sm));
    }
  }
  return out;
}

/** The computed RoPE factors, or the recorded ones of `spec` after checking each agrees with them to 1e-6. */
function ropeFactors(spec: GeneratedFixture, computed: Float32Array): Float32Array {
  if (spec.ropeFreqs === undefined) return computed;
  const rec = Float32Array.from(spec.ropeFreqs);
  const bad = computed.findIndex((x, i) => !(Math.abs(x - rec[i]!) <= 1e-6 * Math.abs(x)));
  if (rec.length !== computed.length || bad >= 0)
    throw new Error(
      `${spec.path}: recorded ropeFreqs differ from the computed llama3 factors by more than 1e-6 (index ${bad})`,
    );
  return rec;
}

/** Float32 -> IEEE half bits, round to nearest even (ggml's GGML_FP32_TO_FP16). */
function f32ToF16(v: number): number {
  const u = new Uint32Array(new Float32Array([v]).buffer)[0]!;
  const sign = (u >>> 16) & 0x8000,
    exp = (u >>> 23) & 0xff;
  let mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e,
      half = 1 << (shift - 1),
      rem = mant & ((1 << shift) - 1);
    let h = mant >>> shift;
    if (rem > half || (rem === half && (h & 1) === 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h++;
  return sign | h;
}

function toF16(a: Float32Array): Uint8Array {
  const out = new Uint16Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = f32ToF16(a[i]!);
  return new Uint8Array(out.buffer);
}

/** ggml's quantize_row_q8_0_ref: per 32 values an f16 scale amax/127 and round-half-away int8s. */
function toQ8_0(a: Float32Array): Uint8Array {
  const out = new Uint8Array((a.length / 32) * 34),
    dv = new DataView(out.buffer),
    f = Math.fround;
  for (let b = 0; b < a.length / 32; b++) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(a[b * 32 + j]!));
    const d = f(amax / 127),
      id = d !== 0 ? f(1 / d) : 0;
    dv.setUint16(b * 34, f32ToF16(d), true);
    for (let j = 0; j < 32; j++) {
      const x = f(a[b * 32 + j]! * id);
      dv.setInt8(b * 34 + 2 + j, Math.sign(x) * Math.round(Math.abs(x)));
    }
  }
  return out;
}

/** The tokenizer.ggml.* keys of a byte-level BPE tokenizer.json, as hf2gguf's add_tokenizer writes them. */
function tokenizerKeys(tj: Json, cfg: Json, nVocab: number): Record<string, GGUFWriteValue> {
  const model = tj["model"] as { type: string; vocab: Record<string, number>; merges?: (string | string[])[] };
  const norm =
    JSON.stringify(tj["normalizer"] ?? null) +
    JSON.stringify(tj["pre_tokenizer"] ?? null) +
    JSON.stringify(tj["decoder"] ?? null);
  if (model.type !== "BPE" || !norm.includes("ByteLevel")) throw new Error("only byte-level BPE tokenizers regenerate");
  const vocab = new Map(Object.entries(model.vocab));
  const added = new Map<number, { content: string; special?: boolean }>();
  for (const t of (tj["added_tokens"] ?? []) as { id: number; content: string; special?: boolean }[])
    added.set(t.id, t);
  for (const [id, t] of added) if (!vocab.has(t.content)) vocab.set(t.content, id);
  const idToTok = new Map<number, string>();
  for (const [t, id] of vocab) idToTok.set(id, t);
  const tokens: string[] = [],
    types: number[] = [];
  for (let i = 0; i < nVocab; i++) {
    const t = idToTok.get(i);
    if (t === undefined) {
      tokens.push(`[PAD${i}]`);
      types.push(5);
      continue;
    }
    tokens.push(t);
    types.push(added.get(i)?.special === true ? 3 : added.has(i) ? 4 : 1);
  }
  const keys: Record<string, GGUFWriteValue> = {
    "tokenizer.ggml.model": { type: "string", value: "gpt2" },
    "tokenizer.ggml.pre": { type: "string", value: "llama-bpe" },
    "tokenizer.ggml.tokens": { type: "array", elem: "string", value: tokens },
    "tokenizer.ggml.token_type": { type: "array", elem: "i32", value: types },
    "tokenizer.ggml.merges": {
      type: "array",
      elem: "string",
      value: (model.merges ?? []).map((m) => (typeof m === "string" ? m : m.join(" "))),
    },
  };
  for (const [key, ck] of [
    ["bos", "bos_token_id"],
    ["eos", "eos_token_id"],
    ["padding", "pad_token_id"],
  ] as const) {
    let v = cfg[ck] as number | number[] | null | undefined;
    if (Array.isArray(v)) v = v[0];
    if (typeof v === "number" && v >= 0 && v < nVocab)
      keys[`tokenizer.ggml.${key}_token_id`] = { type: "u32", value: v };
  }
  const pp = tj["post_processor"];
  const pps = JSON.stringify(pp ?? null);
  const bos =
    pp !== undefined &&
    pp !== null &&
    (pps.toLowerCase().includes("bos") || pps.includes("<s>") || pps.includes("begin_of_text"));
  keys["tokenizer.ggml.add_bos_token"] = { type: "bool", value: bos };
  keys["tokenizer.ggml.add_eos_token"] = { type: "bool", value: false };
  return keys;
}

/** Writes the GGUF file `spec` describes from the fixtures folder `root` to `out`; returns its bytes. */
export function buildFixtureGGUF(root: string, spec: GeneratedFixture): Uint8Array {
  const dir = path.join(root, spec.source);
  const cfg = readJson(path.join(dir, "config.json")),
    tj = readJson(path.join(dir, "tokenizer.json"));
  const archName = ((cfg["architectures"] ?? []) as string[])[0];
  const arch = archName === "LlamaForCausalLM" ? "llama" : archName === "Qwen3ForCausalLM" ? "qwen3" : undefined;
  if (arch === undefined)
    throw new Error(`${spec.source}: architecture ${archName} does not regenerate (llama and qwen3 only)`);
  const st = openSafetensors(path.join(dir, spec.weights));
  try {
    const H = Number(cfg["num_attention_heads"]),
      KV = Number(cfg["num_key_value_heads"] ?? H),
      L = Number(cfg["num_hidden_layers"]);
    const hd = Number(cfg["head_dim"] ?? 0) || Number(cfg["hidden_size"]) / H;
    const tensors: [string, Float32Array, number[]][] = [];
    const get = (n: string): [Float32Array, number[]] => [st.readF32Sync(n), [...st.info(n).shape]];
    const add = (name: string, [d, s]: [Float32Array, number[]]) => tensors.push([name, d, s]);
    const permuted = (n: string, heads: number): [Float32Array, number[]] => {
      const [d, s] = get(n),
        cols = s[1]!,
        out = new Float32Array(d.length);
      llamaQKRowOrder(heads, hd).forEach((src, g) => out.set(d.subarray(src * cols, (src + 1) * cols), g * cols));
      return [out, s];
    };
    add("token_embd.weight", get("model.embed_tokens.weight"));
    const [theta, rs] = ropeParams(
      cfg,
      ((cfg["layer_types"] ?? []) as string[]).includes("full_attention") ? "full_attention" : undefined,
    );
    const ropeType = String(rs["rope_type"] ?? rs["type"] ?? "default");
    if (arch === "llama" && ropeType === "llama3")
      add("rope_freqs.weight", [ropeFactors(spec, llama3RopeFactors(cfg, hd)), [hd / 2]]);
    for (let i = 0; i < L; i++) {
      const p = `model.layers.${i}.`,
        b = `blk.${i}.`;
      add(`${b}attn_norm.weight`, get(`${p}input_layernorm.weight`));
      add(
        `${b}attn_q.weight`,
        arch === "llama" ? permuted(`${p}self_attn.q_proj.weight`, H) : get(`${p}self_attn.q_proj.weight`),
      );
      add(
        `${b}attn_k.weight`,
        arch === "llama" ? permuted(`${p}self_attn.k_proj.weight`, KV) : get(`${p}self_attn.k_proj.weight`),
      );
      add(`${b}attn_v.weight`, get(`${p}self_attn.v_proj.weight`));
      for (const [x, g] of [
        ["q", "attn_q"],
        ["k", "attn_k"],
        ["v", "attn_v"],
        ["o", "attn_output"],
      ] as const) {
        if (st.has(`${p}self_attn.${x}_proj.bias`)) add(`${b}${g}.bias`, get(`${p}self_attn.${x}_proj.bias`));
      }
      add(`${b}attn_output.weight`, get(`${p}self_attn.o_proj.weight`));
      if (st.has(`${p}self_attn.q_norm.weight`)) {
        add(`${b}attn_q_norm.weight`, get(`${p}self_attn.q_norm.weight`));
        add(`${b}attn_k_norm.weight`, get(`${p}self_attn.k_norm.weight`));
      }
      add(`${b}ffn_norm.weight`, get(`${p}post_attention_layernorm.weight`));
      add(`${b}ffn_gate.weight`, get(`${p}mlp.gate_proj.weight`));
      add(`${b}ffn_up.weight`, get(`${p}mlp.up_proj.weight`));
      add(`${b}ffn_down.weight`, get(`${p}mlp.down_proj.weight`));
    }
    add("output_norm.weight", get("model.norm.weight"));
    const tied = cfg["tie_word_embeddings"] === true || !st.has("lm_head.weight");
    if (!tied) add("output.weight", get("lm_head.weight"));
    const nVocab = tensors[0]![2][0]!;
    const u32 = (value: number): GGUFWriteValue => ({ type: "u32", value });
    const meta: Record<string, GGUFWriteValue> = {
      "general.architecture": { type: "string", value: arch },
      "general.type": { type: "string", value: "model" },
      "general.name": { type: "string", value: spec.name },
      [`${arch}.vocab_size`]: u32(nVocab),
      [`${arch}.context_length`]: u32(Number(cfg["max_position_embeddings"] ?? 2048)),
      [`${arch}.embedding_length`]: u32(Number(cfg["hidden_size"])),
      [`${arch}.block_count`]: u32(L),
      [`${arch}.feed_forward_length`]: u32(Number(cfg["intermediate_size"])),
      [`${arch}.attention.head_count`]: u32(H),
      [`${arch}.attention.head_count_kv`]: u32(KV),
      [`${arch}.attention.layer_norm_rms_epsilon`]: { type: "f32", value: Number(cfg["rms_norm_eps"] ?? 1e-6) },
    };
    if (Number(cfg["head_dim"] ?? 0) > 0) {
      meta[`${arch}.attention.key_length`] = u32(hd);
      meta[`${arch}.attention.value_length`] = u32(hd);
    }
    meta[`${arch}.rope.freq_base`] = { type: "f32", value: theta };
    const prf = Number(rs["partial_rotary_factor"] ?? cfg["partial_rotary_factor"] ?? 1) || 1;
    if (arch === "llama" || prf !== 1) meta[`${arch}.rope.dimension_count`] = u32(Math.trunc(hd * prf));
    if (ropeType === "linear") {
      meta[`${arch}.rope.scaling.type`] = { type: "string", value: "linear" };
      meta[`${arch}.rope.scaling.factor`] = { type: "f32", value: Number(rs["factor"]) };
    } else if (ropeType !== "default" && ropeType !== "llama3")
      throw new Error(`${spec.source}: rope type ${ropeType} does not regenerate`);
    meta["general.file_type"] = u32(FILE_TYPE[spec.type]);
    meta["general.quantization_version"] = u32(2);
    Object.assign(meta, tokenizerKeys(tj, cfg, nVocab));
    // hf2gguf's choose_types: matrices take the file's type, norms and 1-D tensors stay F32.
    const fmt = tensors.map(([n, , s]) =>
      n.endsWith("weight") && s.length >= 2 && !n.includes("_norm.weight") ? spec.type : "F32",
    );
    const enc = encodeGGUFHeader(
      meta,
      tensors.map(([n, , s], i) => ({ name: n, ggmlDims: [...s].reverse(), format: QUANT_FORMATS[fmt[i]!] })),
    );
    const out = new Uint8Array(enc.header.length + enc.dataLength);
    out.set(enc.header);
    tensors.forEach(([, d], i) => {
      const bytes =
        fmt[i] === "F16"
          ? toF16(d)
          : fmt[i] === "Q8_0"
            ? toQ8_0(d)
            : new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
      out.set(bytes, enc.header.length + enc.placements[i]!.offset);
    });
    return out;
  } finally {
    st.close();
  }
}

/** sha256 (hex) of bytes. */
export function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** The generated-file list of the fixtures folder `root`. */
export function readGeneratedList(root: string): GeneratedFixture[] {
  return readJson(path.join(root, "generated.json"))["files"] as GeneratedFixture[];
}

/**
 * Regenerates `spec` under `root` (or `outRoot`), failing with a message naming the file when its sha256 differs
 * from the recorded one; writes through a temporary name so concurrent test workers never read a partial file.
 */
export function regenerate(root: string, spec: GeneratedFixture, outRoot = root): string {
  const bytes = buildFixtureGGUF(root, spec);
  const got = sha256(bytes);
  if (got !== spec.sha256 || bytes.byteLength !== spec.bytes) {
    throw new Error(
      `fixtures/${spec.path}: regenerated file differs from the recorded original (sha256 ${got}, ${bytes.byteLength} bytes; recorded ${spec.sha256}, ${spec.bytes} bytes)`,
    );
  }
  const out = path.join(outRoot, spec.path);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  const tmp = `${out}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, bytes);
  fs.renameSync(tmp, out);
  return out;
}

// Writes a Llama-3.2-1B-shaped GGUF with random (valid) weights for benchmarks, streamed to disk.
// usage: pnpm make-1b-gguf [--type F16|Q8_0|Q4_K_M] [--config FILE] [--out FILE]
import { randomFillSync } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import {
  QUANT_FORMATS,
  encodeGGUFHeader,
  readHFConfig,
  type GGUFWriteTensor,
  type GGUFWriteValue,
  type QuantFormat,
} from "../src/index.js";
import { fixture } from "@poot/testkit";

/** The package folder (this script also runs bundled from .cache/scripts). */
function packageDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, "package.json"))) dir = path.dirname(dir);
  return dir;
}
const pkg = packageDir();
const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : dflt;
};
const type = arg("type", "Q4_K_M");
const configPath = arg("config", fixture("configs/llama-3.2-1b.json"));
const out = arg("out", path.join(pkg, ".cache", `llama-3.2-1b-${type}.gguf`));
if (!["F16", "Q8_0", "Q4_K_M"].includes(type)) throw new Error(`--type must be F16, Q8_0 or Q4_K_M, not ${type}`);

const c = readHFConfig(configPath);
const { hiddenSize: H, intermediateSize: I, numLayers: L, numHeads, numKVHeads, headDim, vocabSize: V } = c;

/** llama-quantize's use_more_bits: the layers that get Q6_K in Q4_K_M. */
const moreBits = (i: number) => i < L / 8 || i >= (7 * L) / 8 || (i - Math.floor(L / 8)) % 3 === 2;
const matFormat = (role: "embd" | "attn_v" | "ffn_down" | "other", layer: number): QuantFormat => {
  if (type === "F16") return QUANT_FORMATS.F16;
  if (type === "Q8_0") return QUANT_FORMATS.Q8_0;
  if (role === "embd" || ((role === "attn_v" || role === "ffn_down") && moreBits(layer))) return QUANT_FORMATS.Q6_K;
  return QUANT_FORMATS.Q4_K;
};

// ggml dims are fastest-first: a [out, in] weight is ggmlDims [in, out].
const tensors: GGUFWriteTensor[] = [{ name: "token_embd.weight", ggmlDims: [H, V], format: matFormat("embd", 0) }];
tensors.push({ name: "rope_freqs.weight", ggmlDims: [headDim / 2], format: QUANT_FORMATS.F32 });
for (let i = 0; i < L; i++) {
  const b = `blk.${i}.`;
  tensors.push(
    { name: `${b}attn_norm.weight`, ggmlDims: [H], format: QUANT_FORMATS.F32 },
    { name: `${b}attn_q.weight`, ggmlDims: [H, numHeads * headDim], format: matFormat("other", i) },
    { name: `${b}attn_k.weight`, ggmlDims: [H, numKVHeads * headDim], format: matFormat("other", i) },
    { name: `${b}attn_v.weight`, ggmlDims: [H, numKVHeads * headDim], format: matFormat("attn_v", i) },
    { name: `${b}attn_output.weight`, ggmlDims: [numHeads * headDim, H], format: matFormat("other", i) },
    { name: `${b}ffn_norm.weight`, ggmlDims: [H], format: QUANT_FORMATS.F32 },
    { name: `${b}ffn_gate.weight`, ggmlDims: [H, I], format: matFormat("other", i) },
    { name: `${b}ffn_up.weight`, ggmlDims: [H, I], format: matFormat("other", i) },
    { name: `${b}ffn_down.weight`, ggmlDims: [I, H], format: matFormat("ffn_down", i) },
  );
}
tensors.push({ name: "output_norm.weight", ggmlDims: [H], format: QUANT_FORMATS.F32 });

// A vocabulary of realistic size (token strings and merges are synthetic) so header parsing costs what it would.
const tokens = Array.from({ length: V }, (_, i) =>
  i < 256 ? `<0x${i.toString(16).padStart(2, "0").toUpperCase()}>` : `tok${i}`,
);
const merges = Array.from(
  { length: 280_000 },
  (_, i) => `tok${256 + (i % (V - 256))} tok${256 + ((i * 7919) % (V - 256))}`,
);
const s = (value: string): GGUFWriteValue => ({ type: "string", value });
const u32 = (value: number): GGUFWriteValue => ({ type: "u32", value });
const f32 = (value: number): GGUFWriteValue => ({ type: "f32", value });
const metadata: Record<string, GGUFWriteValue> = {
  "general.architecture": s("llama"),
  "general.name": s("random Llama-3.2-1B-shaped benchmark model"),
  "llama.vocab_size": u32(V),
  "llama.context_length": u32(c.maxPositions),
  "llama.embedding_length": u32(H),
  "llama.block_count": u32(L),
  "llama.feed_forward_length": u32(I),
  "llama.attention.head_count": u32(numHeads),
  "llama.attention.head_count_kv": u32(numKVHeads),
  "llama.attention.layer_norm_rms_epsilon": f32(c.rmsNormEps),
  "llama.attention.key_length": u32(headDim),
  "llama.attention.value_length": u32(headDim),
  "llama.rope.freq_base": f32(c.rope.theta),
  "llama.rope.dimension_count": u32(headDim),
  "general.file_type": u32({ F16: 1, Q8_0: 7, Q4_K_M: 15 }[type]!),
  "general.quantization_version": u32(2),
  "tokenizer.ggml.model": s("gpt2"),
  "tokenizer.ggml.pre": s("llama-bpe"),
  "tokenizer.ggml.tokens": { type: "array", elem: "string", value: tokens },
  "tokenizer.ggml.token_type": { type: "array", elem: "i32", value: tokens.map(() => 1) },
  "tokenizer.ggml.merges": { type: "array", elem: "string", value: merges },
  "tokenizer.ggml.bos_token_id": u32(c.bosTokenId ?? 0),
  "tokenizer.ggml.eos_token_id": u32(c.eosTokenIds[0] ?? 0),
};

/** Random small f16 bits (|x| in [2^-12, 2^-5)) for block scales: valid, finite, nonzero. */
const smallF16 = (r: number) => (r & 0x83ff) | ((3 + ((r >> 10) % 7)) << 10);
/** Makes random bytes a valid block of `f`: scale fields become finite small f16s, F16 data finite. */
function fixBlocks(f: QuantFormat, buf: Uint8Array): void {
  const halves = f.fields.filter((x) => x.kind === "f16");
  const step = f.blockBytes;
  for (let o = 0; o + step <= buf.length; o += step) {
    for (const h of halves) {
      for (let k = 0; k < h.count; k++) {
        const at = o + h.offset + 2 * k;
        const v =
          f.name === "F16"
            ? buf[at]! | ((buf[at + 1]! << 8) & 0x83ff) | ((12 + (buf[at + 1]! & 3)) << 10)
            : smallF16(buf[at]! | (buf[at + 1]! << 8));
        buf[at] = v & 0xff;
        buf[at + 1] = v >> 8;
      }
    }
  }
}

const t0 = performance.now();
fs.mkdirSync(path.dirname(out), { recursive: true });
const enc = encodeGGUFHeader(metadata, tensors);
const fd = fs.openSync(out, "w");
fs.writeSync(fd, enc.header);
// One pool of valid random blocks per format, written at rotating offsets (fast, still random-looking).
const POOL = 8 << 20;
const pools = new Map<string, Uint8Array>();
const pool = (f: QuantFormat): Uint8Array => {
  let p = pools.get(f.name);
  if (p === undefined) {
    p = randomFillSync(new Uint8Array(Math.floor(POOL / f.blockBytes) * f.blockBytes));
    if (f.name === "F32") new Float32Array(p.buffer).forEach((_, i, a) => (a[i] = 1 + ((i % 97) - 48) / 1000));
    else fixBlocks(f, p);
    pools.set(f.name, p);
  }
  return p;
};
let pos = enc.header.length;
let rot = 0;
for (let i = 0; i < tensors.length; i++) {
  const t = tensors[i]!,
    pl = enc.placements[i]!;
  const start = enc.header.length + pl.offset;
  if (start > pos) fs.writeSync(fd, new Uint8Array(start - pos));
  const p = pool(t.format);
  let left = pl.byteLength;
  let from = (rot++ * 7 * t.format.blockBytes * 1021) % p.length;
  from -= from % t.format.blockBytes;
  while (left > 0) {
    const n = Math.min(left, p.length - from);
    fs.writeSync(fd, p, from, n);
    left -= n;
    from = 0;
  }
  pos = start + pl.byteLength;
}
fs.closeSync(fd);
const counts: Record<string, number> = {};
for (const t of tensors) counts[t.format.name] = (counts[t.format.name] ?? 0) + 1;
console.log(
  `wrote ${out}: ${(fs.statSync(out).size / 2 ** 20).toFixed(1)} MiB, ${tensors.length} tensors ${JSON.stringify(counts)}, header ${(enc.header.length / 2 ** 20).toFixed(2)} MiB, in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
);

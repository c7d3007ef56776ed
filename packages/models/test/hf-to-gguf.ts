// Test helper: writes an F32 GGUF of a small HF folder with llama.cpp's conventions (tensor names, metadata keys,
// llama-arch Q/K interleave, Gemma 1+w norms, stacked experts) as the fixture tool hf2gguf.py does, for families
// without a shared GGUF fixture.
import * as fs from "node:fs";
import * as path from "node:path";
import {
  QUANT_FORMATS,
  encodeGGUFHeader,
  llamaQKRowOrder,
  openSafetensors,
  readHFConfig,
  type GGUFWriteValue,
} from "@poot/models";

const ARCH: Record<string, string> = {
  mixtral: "llama",
  mistral: "llama",
  llama: "llama",
  qwen2: "qwen2",
  gemma2: "gemma2",
  phi3: "phi3",
  qwen3moe: "qwen3moe",
};

/** Converts `hfDir` into `out` (F32 GGUF v3). */
export function hfToGGUF(hfDir: string, out: string): void {
  const cfg = readHFConfig(hfDir);
  const st = openSafetensors(hfDir);
  const arch = ARCH[cfg.architecture];
  if (arch === undefined) throw new Error(`no GGUF mapping for ${cfg.architecture}`);
  const gemma = arch === "gemma2";
  const tensors: { name: string; data: Float32Array; shape: number[] }[] = [];
  const get = (n: string) => ({ data: st.readF32Sync(n), shape: [...st.info(n).shape] });
  const add = (name: string, t: { data: Float32Array; shape: number[] }) => tensors.push({ name, ...t });
  const norm = (name: string, hf: string) => {
    const t = get(hf);
    add(name, gemma ? { data: t.data.map((x) => Math.fround(x + 1)), shape: t.shape } : t);
  };
  const permuted = (hf: string, heads: number) => {
    const t = get(hf),
      cols = t.shape[1]!,
      order = llamaQKRowOrder(heads, cfg.headDim),
      d = new Float32Array(t.data.length);
    order.forEach((src, g) => d.set(t.data.subarray(src * cols, (src + 1) * cols), g * cols));
    return { data: d, shape: t.shape };
  };
  const stack = (names: string[]) => {
    const parts = names.map(get),
      n = parts[0]!.data.length,
      d = new Float32Array(n * parts.length);
    parts.forEach((p, e) => d.set(p.data, e * n));
    return { data: d, shape: [parts.length, ...parts[0]!.shape] };
  };
  add("token_embd.weight", get("model.embed_tokens.weight"));
  for (let i = 0; i < cfg.numLayers; i++) {
    const p = `model.layers.${i}.`,
      b = `blk.${i}.`;
    norm(`${b}attn_norm.weight`, `${p}input_layernorm.weight`);
    if (arch === "phi3") add(`${b}attn_qkv.weight`, get(`${p}self_attn.qkv_proj.weight`));
    else {
      add(
        `${b}attn_q.weight`,
        arch === "llama" ? permuted(`${p}self_attn.q_proj.weight`, cfg.numHeads) : get(`${p}self_attn.q_proj.weight`),
      );
      add(
        `${b}attn_k.weight`,
        arch === "llama" ? permuted(`${p}self_attn.k_proj.weight`, cfg.numKVHeads) : get(`${p}self_attn.k_proj.weight`),
      );
      add(`${b}attn_v.weight`, get(`${p}self_attn.v_proj.weight`));
    }
    for (const x of ["q", "k", "v"])
      if (st.has(`${p}self_attn.${x}_proj.bias`)) add(`${b}attn_${x}.bias`, get(`${p}self_attn.${x}_proj.bias`));
    add(`${b}attn_output.weight`, get(`${p}self_attn.o_proj.weight`));
    if (st.has(`${p}self_attn.q_norm.weight`)) {
      norm(`${b}attn_q_norm.weight`, `${p}self_attn.q_norm.weight`);
      norm(`${b}attn_k_norm.weight`, `${p}self_attn.k_norm.weight`);
    }
    if (gemma) {
      norm(`${b}post_attention_norm.weight`, `${p}post_attention_layernorm.weight`);
      norm(`${b}ffn_norm.weight`, `${p}pre_feedforward_layernorm.weight`);
      norm(`${b}post_ffw_norm.weight`, `${p}post_feedforward_layernorm.weight`);
    } else norm(`${b}ffn_norm.weight`, `${p}post_attention_layernorm.weight`);
    const moe = cfg.moe;
    if (moe !== null) {
      const mix = cfg.architecture === "mixtral";
      add(`${b}ffn_gate_inp.weight`, get(mix ? `${p}block_sparse_moe.gate.weight` : `${p}mlp.gate.weight`));
      const names = (role: string, w: string) =>
        Array.from({ length: moe.numExperts }, (_, e) =>
          mix ? `${p}block_sparse_moe.experts.${e}.${w}.weight` : `${p}mlp.experts.${e}.${role}_proj.weight`,
        );
      add(`${b}ffn_gate_exps.weight`, stack(names("gate", "w1")));
      add(`${b}ffn_up_exps.weight`, stack(names("up", "w3")));
      add(`${b}ffn_down_exps.weight`, stack(names("down", "w2")));
    } else if (arch === "phi3") {
      add(`${b}ffn_up.weight`, get(`${p}mlp.gate_up_proj.weight`));
      add(`${b}ffn_down.weight`, get(`${p}mlp.down_proj.weight`));
    } else {
      for (const [g, h] of [
        ["ffn_gate", "gate_proj"],
        ["ffn_up", "up_proj"],
        ["ffn_down", "down_proj"],
      ] as const)
        add(`${b}${g}.weight`, get(`${p}mlp.${h}.weight`));
    }
  }
  norm("output_norm.weight", "model.norm.weight");
  if (st.has("lm_head.weight") && !cfg.tieWordEmbeddings) add("output.weight", get("lm_head.weight"));
  st.close();
  const u32 = (value: number): GGUFWriteValue => ({ type: "u32", value });
  const f32 = (value: number): GGUFWriteValue => ({ type: "f32", value });
  const meta: Record<string, GGUFWriteValue> = {
    "general.architecture": { type: "string", value: arch },
    [`${arch}.vocab_size`]: u32(cfg.vocabSize),
    [`${arch}.context_length`]: u32(cfg.maxPositions),
    [`${arch}.embedding_length`]: u32(cfg.hiddenSize),
    [`${arch}.block_count`]: u32(cfg.numLayers),
    [`${arch}.feed_forward_length`]: u32(cfg.intermediateSize),
    [`${arch}.attention.head_count`]: u32(cfg.numHeads),
    [`${arch}.attention.head_count_kv`]: u32(cfg.numKVHeads),
    [`${arch}.attention.key_length`]: u32(cfg.headDim),
    [`${arch}.attention.value_length`]: u32(cfg.headDim),
    [`${arch}.attention.layer_norm_rms_epsilon`]: f32(cfg.rmsNormEps),
    [`${arch}.rope.freq_base`]: f32(cfg.rope.theta),
    [`${arch}.rope.dimension_count`]: u32(cfg.rope.rotaryDim),
  };
  if (cfg.moe !== null) {
    meta[`${arch}.expert_count`] = u32(cfg.moe.numExperts);
    meta[`${arch}.expert_used_count`] = u32(cfg.moe.topK);
    meta[`${arch}.expert_feed_forward_length`] = u32(cfg.moe.expertIntermediateSize);
  }
  if (cfg.slidingWindow !== null) meta[`${arch}.attention.sliding_window`] = u32(cfg.slidingWindow);
  if (cfg.attnLogitSoftcap !== null) meta[`${arch}.attn_logit_softcapping`] = f32(cfg.attnLogitSoftcap);
  if (cfg.finalLogitSoftcap !== null) meta[`${arch}.final_logit_softcapping`] = f32(cfg.finalLogitSoftcap);
  const enc = encodeGGUFHeader(
    meta,
    tensors.map((t) => ({ name: t.name, ggmlDims: [...t.shape].reverse(), format: QUANT_FORMATS.F32 })),
  );
  const bytes = new Uint8Array(enc.header.length + enc.dataLength);
  bytes.set(enc.header);
  enc.placements.forEach((pl, k) =>
    bytes.set(
      new Uint8Array(tensors[k]!.data.buffer, tensors[k]!.data.byteOffset, pl.byteLength),
      enc.header.length + pl.offset,
    ),
  );
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, bytes);
}

// llama.cpp's C API (llama.h of node-llama-cpp 3.21.1's prebuilt CPU library) through koffi: just what the
// format fixtures need — llama_model_quantize, model/context setup, llama_decode and the logits.
// Struct layouts follow that llama.h field for field; a mismatch shows up as a load failure, not silently.
import path from "node:path";
import { getBinsDir } from "@node-llama-cpp/linux-x64";
import koffi from "koffi";

/** Folder of the prebuilt CPU binaries (libllama, libggml, the per-CPU ggml-cpu variants). */
const dir = path.join(getBinsDir().binsDir, "linux-x64");
const ggml = koffi.load(path.join(dir, "libggml.v0.4.0.so"));
const llama = koffi.load(path.join(dir, "libllama.v0.4.0.so"));

const QuantizeParams = koffi.struct("llama_model_quantize_params", {
  nthread: "int32_t",
  ftype: "int32_t",
  output_tensor_type: "int32_t",
  token_embedding_type: "int32_t",
  allow_requantize: "bool",
  quantize_output_tensor: "bool",
  only_copy: "bool",
  pure: "bool",
  keep_split: "bool",
  dry_run: "bool",
  imatrix: "void *",
  kv_overrides: "void *",
  tt_overrides: "void *",
  prune_layers: "void *",
  max_buf_size: "size_t",
});
const ModelParams = koffi.struct("llama_model_params", {
  devices: "void *",
  tensor_buft_overrides: "void *",
  n_gpu_layers: "int32_t",
  split_mode: "int32_t",
  load_mode: "int32_t",
  lazy_mode: "int32_t",
  main_gpu: "int32_t",
  tensor_split: "void *",
  progress_callback: "void *",
  progress_callback_user_data: "void *",
  kv_overrides: "void *",
  vocab_only: "bool",
  check_tensors: "bool",
  use_extra_bufts: "bool",
  no_host: "bool",
  no_alloc: "bool",
  load_mtp: "bool",
});
const ContextParams = koffi.struct("llama_context_params", {
  n_ctx: "uint32_t",
  n_batch: "uint32_t",
  n_ubatch: "uint32_t",
  n_seq_max: "uint32_t",
  n_rs_seq: "uint32_t",
  n_outputs_max: "uint32_t",
  n_outputs_max_per_seq: "uint32_t",
  n_threads: "int32_t",
  n_threads_batch: "int32_t",
  ctx_type: "int32_t",
  rope_scaling_type: "int32_t",
  pooling_type: "int32_t",
  attention_type: "int32_t",
  flash_attn_type: "int32_t",
  rope_freq_base: "float",
  rope_freq_scale: "float",
  yarn_ext_factor: "float",
  yarn_attn_factor: "float",
  yarn_beta_fast: "float",
  yarn_beta_slow: "float",
  yarn_orig_ctx: "uint32_t",
  defrag_thold: "float",
  cb_eval: "void *",
  cb_eval_user_data: "void *",
  type_k: "int32_t",
  type_v: "int32_t",
  abort_callback: "void *",
  abort_callback_data: "void *",
  embeddings: "bool",
  offload_kqv: "bool",
  no_perf: "bool",
  op_offload: "bool",
  swa_full: "bool",
  kv_unified: "bool",
  samplers: "void *",
  n_samplers: "size_t",
  ctx_other: "void *",
});
const TensorOverride = koffi.struct("llama_model_tensor_override", { pattern: "const char *", type: "int32_t" });
const Batch = koffi.struct("llama_batch", {
  n_tokens: "int32_t",
  token: "int32_t *",
  embd: "float *",
  pos: "int32_t *",
  n_seq_id: "int32_t *",
  seq_id: "int32_t **",
  logits: "int8_t *",
});

const api = {
  loadAllFromPath: ggml.func("void ggml_backend_load_all_from_path(const char *dir)"),
  backendInit: llama.func("void llama_backend_init(void)"),
  logSet: llama.func("void llama_log_set(void *cb, void *ud)"),
  quantizeDefaults: llama.func("llama_model_quantize_params llama_model_quantize_default_params(void)"),
  quantize: llama.func(
    "uint32_t llama_model_quantize(const char *inp, const char *out, const llama_model_quantize_params *p)",
  ),
  modelDefaults: llama.func("llama_model_params llama_model_default_params(void)"),
  loadModel: llama.func("void *llama_model_load_from_file(const char *path, llama_model_params p)"),
  freeModel: llama.func("void llama_model_free(void *model)"),
  modelVocab: llama.func("void *llama_model_get_vocab(void *model)"),
  nVocab: llama.func("int32_t llama_vocab_n_tokens(void *vocab)"),
  contextDefaults: llama.func("llama_context_params llama_context_default_params(void)"),
  initContext: llama.func("void *llama_init_from_model(void *model, llama_context_params p)"),
  freeContext: llama.func("void llama_free(void *ctx)"),
  batchInit: llama.func("llama_batch llama_batch_init(int32_t n_tokens, int32_t embd, int32_t n_seq_max)"),
  batchFree: llama.func("void llama_batch_free(llama_batch batch)"),
  decode: llama.func("int32_t llama_decode(void *ctx, llama_batch batch)"),
  logitsIth: llama.func("float *llama_get_logits_ith(void *ctx, int32_t i)"),
};

let ready = false;
// llama.cpp logs every load and graph reservation to stderr; the fixture tool keeps errors only.
const LogCallback = koffi.proto("void ggml_log_callback(int level, const char *text, void *ud)");
const quiet = koffi.register((level, text) => {
  if (level >= 4) process.stderr.write(text);
}, koffi.pointer(LogCallback));

function init() {
  if (ready) return;
  api.logSet(quiet, null);
  api.loadAllFromPath(dir);
  api.backendInit();
  ready = true;
}

/** ggml type ids (ggml.h) and llama ftypes (llama.h) the fixtures use. */
export const FTYPE = {
  F32: 0,
  Q4_0: 2,
  Q4_1: 3,
  Q8_0: 7,
  Q5_0: 8,
  Q5_1: 9,
  Q2_K: 10,
  Q3_K_M: 12,
  Q4_K_M: 15,
  Q5_K_M: 17,
  Q5_K_S: 16,
  Q6_K: 18,
  IQ4_NL: 25,
  IQ4_XS: 30,
  MXFP4_MOE: 38,
};

/**
 * llama_model_quantize(inp -> out) with ftype; `pure` quantizes every 2-D weight to the ftype's default type
 * (ggml's shape fallbacks still apply); `allowRequantize` lets ftype F32 dequantize a quantized file.
 */
export function quantize(inp, out, ftype, { pure = false, allowRequantize = false, nthread = 2, overrides = [] } = {}) {
  init();
  const p = api.quantizeDefaults();
  if (overrides.length > 0) {
    // [{ pattern (regex on the tensor name), type (ggml type id) }], terminated by a null pattern.
    const list = [...overrides, { pattern: null, type: 0 }];
    const buf = koffi.alloc(TensorOverride, list.length);
    koffi.encode(buf, TensorOverride, list, list.length);
    p.tt_overrides = buf;
  }
  p.ftype = ftype;
  p.pure = pure;
  p.allow_requantize = allowRequantize;
  p.nthread = nthread;
  const rc = api.quantize(inp, out, p);
  if (rc !== 0) throw new Error(`llama_model_quantize(${inp} -> ${out}, ftype ${ftype}) failed: ${rc}`);
}

/** A loaded model with one context: prompt logits, and greedy decoding with the KV cache. */
export class LlamaModel {
  constructor(file, { nCtx = 64, threads = 2 } = {}) {
    init();
    const mp = api.modelDefaults();
    mp.n_gpu_layers = 0;
    this.model = api.loadModel(file, mp);
    if (!this.model) throw new Error(`llama_model_load_from_file failed: ${file}`);
    this.nVocab = api.nVocab(api.modelVocab(this.model));
    const cp = api.contextDefaults();
    cp.n_ctx = nCtx;
    cp.n_batch = nCtx;
    cp.n_ubatch = nCtx;
    cp.n_seq_max = 1;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.flash_attn_type = 0; // disabled: the plain attention path
    cp.type_k = 0;
    cp.type_v = 0; // F32 KV cache
    this.nCtx = nCtx;
    this.threads = threads;
    this.cp = cp;
    this.ctx = api.initContext(this.model, cp);
    if (!this.ctx) throw new Error(`llama_init_from_model failed: ${file}`);
  }

  /** Decodes `ids` at positions pos0.. in one batch; returns float32 logits [ids.length, V] (all rows). */
  step(ids, pos0, allLogits = true) {
    const n = ids.length;
    const b = api.batchInit(n, 0, 1);
    koffi.encode(b.token, "int32_t", Array.from(ids), n);
    koffi.encode(
      b.pos,
      "int32_t",
      ids.map((_, i) => pos0 + i),
      n,
    );
    koffi.encode(
      b.n_seq_id,
      "int32_t",
      ids.map(() => 1),
      n,
    );
    const seqPtrs = koffi.decode(b.seq_id, "void *", n);
    for (const sp of seqPtrs) koffi.encode(sp, "int32_t", [0], 1);
    koffi.encode(
      b.logits,
      "int8_t",
      ids.map((_, i) => (allLogits || i === n - 1 ? 1 : 0)),
      n,
    );
    b.n_tokens = n;
    const rc = api.decode(this.ctx, b);
    if (rc !== 0) {
      api.batchFree(b);
      throw new Error(`llama_decode failed: ${rc}`);
    }
    const V = this.nVocab;
    const out = new Float32Array(n * V);
    for (let i = 0; i < n; i++) {
      if (!allLogits && i !== n - 1) continue;
      const p = api.logitsIth(this.ctx, i);
      out.set(koffi.decode(p, "float", V), i * V);
    }
    api.batchFree(b);
    return out;
  }

  /** Fresh context (empty KV cache). */
  reset() {
    api.freeContext(this.ctx);
    this.ctx = api.initContext(this.model, this.cp);
  }

  close() {
    api.freeContext(this.ctx);
    api.freeModel(this.model);
  }
}

// The tracer's view of a checkpoint: logical weight names (HF or GGUF spelling), their graph-ir dtypes and
// shapes, and the lazy const binding that hands eval each tensor's stored bytes (bf16 bits, packed blocks).
import { isPacked, type ConstSource, type DType, type HostData, type ValueType } from "@poot/graph-ir";
import type { Checkpoint, TensorInfo } from "../checkpoint.js";
import { TraceError } from "../errors.js";
import { hfPackedFormat } from "../quant/hf-formats.js";
import { ggmlPackedFormat } from "../quant/recipes.js";
import type { FileRange } from "../source.js";

/** A weight as the tracer sees it: storage dtype and row-major shape. */
export interface WeightSpec {
  /** Tensor name in the checkpoint (the Const key). */
  readonly name: string;
  /** graph-ir storage dtype (f32, f16, bf16, or packed). */
  readonly dtype: DType;
  /** Row-major shape. */
  readonly shape: readonly number[];
  /** Input columns stored reordered (GPTQ act-order): stored column k is input `inputOrder[k]` (`linear` gathers x so). */
  readonly inputOrder?: Int32Array;
  /** FP8 static activation scale (opt-in, decision 2610): `linear` quantizes x to e4m3 with it first. */
  readonly inputScale?: number;
  /** FP8 dynamic activation quantization (opt-in, decision 2610): inputs per scale group of each row. */
  readonly inputGroup?: number;
}

/** Tensor names of one format; tracers ask for weights by these roles. */
export type TensorNaming = "hf" | "gguf";

/** Per-layer roles of weights (HF spelling in comments). */
export type LayerRole =
  | "attnNorm"
  | "q"
  | "k"
  | "v"
  | "o"
  | "qBias"
  | "kBias"
  | "vBias"
  | "oBias"
  | "sinks"
  | "qkv"
  | "qNorm"
  | "kNorm"
  | "postAttnNorm"
  | "ffnNorm"
  | "postFfnNorm"
  | "gate"
  | "up"
  | "down"
  | "gateUp"
  | "router"
  | "linQkv"
  | "linZ"
  | "linB"
  | "linA"
  | "linConv"
  | "linALog"
  | "linDtBias"
  | "linNorm"
  | "linOut"
  | "kvA"
  | "kvANorm"
  | "kvB";

const HF_LAYER: Record<LayerRole, string> = {
  attnNorm: "input_layernorm.weight",
  q: "self_attn.q_proj.weight",
  k: "self_attn.k_proj.weight",
  v: "self_attn.v_proj.weight",
  o: "self_attn.o_proj.weight",
  qBias: "self_attn.q_proj.bias",
  kBias: "self_attn.k_proj.bias",
  vBias: "self_attn.v_proj.bias",
  oBias: "self_attn.o_proj.bias",
  sinks: "self_attn.sinks",
  kvA: "self_attn.kv_a_proj_with_mqa.weight",
  kvANorm: "self_attn.kv_a_layernorm.weight",
  kvB: "self_attn.kv_b_proj.weight",
  qkv: "self_attn.qkv_proj.weight",
  qNorm: "self_attn.q_norm.weight",
  kNorm: "self_attn.k_norm.weight",
  postAttnNorm: "post_attention_layernorm.weight",
  ffnNorm: "pre_feedforward_layernorm.weight",
  postFfnNorm: "post_feedforward_layernorm.weight",
  gate: "mlp.gate_proj.weight",
  up: "mlp.up_proj.weight",
  down: "mlp.down_proj.weight",
  gateUp: "mlp.gate_up_proj.weight",
  router: "mlp.gate.weight",
  linQkv: "linear_attn.in_proj_qkv.weight",
  linZ: "linear_attn.in_proj_z.weight",
  linB: "linear_attn.in_proj_b.weight",
  linA: "linear_attn.in_proj_a.weight",
  linConv: "linear_attn.conv1d.weight",
  linALog: "linear_attn.A_log",
  linDtBias: "linear_attn.dt_bias",
  linNorm: "linear_attn.norm.weight",
  linOut: "linear_attn.out_proj.weight",
};

const GGUF_LAYER: Partial<Record<LayerRole, string>> = {
  attnNorm: "attn_norm.weight",
  q: "attn_q.weight",
  k: "attn_k.weight",
  v: "attn_v.weight",
  o: "attn_output.weight",
  qBias: "attn_q.bias",
  kBias: "attn_k.bias",
  vBias: "attn_v.bias",
  oBias: "attn_output.bias",
  sinks: "attn_sinks.weight",
  qkv: "attn_qkv.weight",
  qNorm: "attn_q_norm.weight",
  kNorm: "attn_k_norm.weight",
  postAttnNorm: "post_attention_norm.weight",
  ffnNorm: "ffn_norm.weight",
  postFfnNorm: "post_ffw_norm.weight",
  gate: "ffn_gate.weight",
  up: "ffn_up.weight",
  down: "ffn_down.weight",
  gateUp: "ffn_up.weight",
  router: "ffn_gate_inp.weight",
};

/** Global roles: token embedding, final norm, LM head. */
export type GlobalRole = "embed" | "finalNorm" | "lmHead" | "ropeFreqs";

const HF_GLOBAL: Record<GlobalRole, string> = {
  embed: "model.embed_tokens.weight",
  finalNorm: "model.norm.weight",
  lmHead: "lm_head.weight",
  ropeFreqs: "",
};
const GGUF_GLOBAL: Record<GlobalRole, string> = {
  embed: "token_embd.weight",
  finalNorm: "output_norm.weight",
  lmHead: "output.weight",
  ropeFreqs: "rope_freqs.weight",
};

/** Expert-MLP roles: per-expert (or fused) tensors in HF, stacked [E, ...] tensors in GGUF. */
export type ExpertRole = "gate" | "up" | "down";

/** Maps a checkpoint's tensor directory to tracer weights. */
export class ModelWeights {
  /** @param tensors - the checkpoint's tensors; @param naming - HF or GGUF spelling; @param file - for errors. */
  constructor(
    private readonly tensors: ReadonlyMap<string, TensorInfo>,
    readonly naming: TensorNaming,
    readonly file: string,
  ) {}

  /** Builds the weight view of an opened checkpoint. */
  static of(ckpt: Checkpoint): ModelWeights {
    return new ModelWeights(
      new Map(ckpt.tensors().map((t) => [t.name, t])),
      ckpt.format === "gguf" ? "gguf" : "hf",
      ckpt.path,
    );
  }

  /** Name of a per-layer weight (HF layer prefix `model.layers.N.`, GGUF `blk.N.`). */
  layerName(layer: number, role: LayerRole): string {
    if (this.naming === "hf") return `model.layers.${layer}.${HF_LAYER[role]}`;
    const n = GGUF_LAYER[role];
    if (n === undefined)
      throw new TraceError("bad-weight", `GGUF has no tensor name for role ${role}`, { file: this.file, value: role });
    return `blk.${layer}.${n}`;
  }

  /** Name of a global weight. */
  globalName(role: GlobalRole): string {
    return (this.naming === "hf" ? HF_GLOBAL : GGUF_GLOBAL)[role];
  }

  /** GGUF name of a layer's stacked expert tensor [E, out, in] (`blk.N.ffn_gate_exps.weight`). */
  ggufExpertName(layer: number, role: ExpertRole): string {
    return `blk.${layer}.ffn_${role}_exps.weight`;
  }

  /** Whether a tensor exists. */
  has(name: string): boolean {
    return this.tensors.has(name);
  }

  /** The spec of a tensor; a missing tensor or an undecodable type is a TraceError naming it. */
  spec(name: string): WeightSpec {
    const t = this.tensors.get(name);
    if (t === undefined)
      throw new TraceError("missing-tensor", `the model needs tensor "${name}"`, { file: this.file, tensor: name });
    return {
      name,
      dtype: dtypeOf(t),
      shape: t.shape,
      ...(t.inputOrder === undefined ? {} : { inputOrder: t.inputOrder }),
      ...(t.inputScale === undefined ? {} : { inputScale: t.inputScale }),
      ...(t.inputGroup === undefined ? {} : { inputGroup: t.inputGroup }),
    };
  }
}

/** graph-ir storage dtype of a stored tensor. */
export function dtypeOf(t: TensorInfo): DType {
  switch (t.dtype) {
    case "F32":
      return "f32";
    case "F16":
      return "f16";
    case "BF16":
      return "bf16";
    default: {
      const packed = ggmlPackedFormat(t.dtype) ?? hfPackedFormat(t.dtype);
      if (packed === null)
        throw new TraceError("wrong-dtype", `tensor type ${t.dtype} cannot be traced`, {
          file: t.file,
          tensor: t.name,
          offset: t.byteOffset,
          value: t.dtype,
        });
      return { packed };
    }
  }
}

/** Host data of a stored tensor for eval: f32 values, f16/bf16 bits, or packed bytes. */
export function hostData(ckpt: Checkpoint, name: string): HostData {
  return hostDataOf(ckpt.info(name), ckpt.readSync(name));
}

/** Host data of a tensor from its stored bytes (read elsewhere, e.g. ahead of use by the weight pager). */
export function hostDataOf(t: TensorInfo, bytes: Uint8Array): HostData {
  switch (t.dtype) {
    case "F32": {
      const own = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
      return new Float32Array(own.buffer, own.byteOffset, own.byteLength / 4);
    }
    case "F16":
    case "BF16": {
      const own = bytes.byteOffset % 2 === 0 ? bytes : bytes.slice();
      return new Uint16Array(own.buffer, own.byteOffset, own.byteLength / 2);
    }
    default:
      return bytes;
  }
}

/**
 * A lazy, caching eval ConstSource over a checkpoint (each tensor read once). Its `into` reads a tensor straight into
 * a device's memory when the stored bytes are the storage of the asked dtype (packed formats, F32, F16, BF16), so a
 * host-memory device loads weights with one read and no host copy; it returns false where they are not. Its `locate`
 * says, under the same condition, where those bytes lie in the open file (a device may map them).
 */
export function checkpointConsts(ckpt: Checkpoint): ConstSource & {
  readonly into: (key: string, type: ValueType, dst: Uint8Array) => boolean;
  readonly locate: (key: string, type: ValueType, bytes: number) => FileRange | undefined;
} {
  const cache = new Map<string, HostData>();
  const source = (key: string): HostData => {
    let d = cache.get(key);
    if (d === undefined) {
      d = hostData(ckpt, key);
      cache.set(key, d);
    }
    return d;
  };
  const into = (key: string, type: ValueType, dst: Uint8Array): boolean => {
    if (cache.has(key) || !storedAs(ckpt.info(key), type, dst.byteLength)) return false;
    ckpt.readInto(key, dst);
    return true;
  };
  // Where the stored bytes are the storage as they are, a host-memory device may map them from the file instead.
  const locate = (key: string, type: ValueType, bytes: number): FileRange | undefined =>
    cache.has(key) || !storedAs(ckpt.info(key), type, bytes) ? undefined : ckpt.locate?.(key);
  return Object.assign(source, { into, locate });
}

/**
 * Whether a stored tensor's bytes are, as they are, the storage of `type` in `bytes` bytes (packed formats, F32, F16,
 * BF16 stored as asked): then a reader may copy them straight into a device's memory.
 */
export function storedAs(t: TensorInfo, type: ValueType, bytes: number): boolean {
  const want = isPacked(type.dtype) ? type.dtype.packed.name : type.dtype;
  return t.dtype.toLowerCase() === want.toLowerCase() && t.byteLength === bytes;
}

// Hugging Face quantized checkpoints as data: the quantization_config of GPTQ, AWQ and FP8 (e4m3) repos parsed into
// typed source layouts, and the graph-ir PackedFormats (decode recipes) their weights are re-blocked into.
import type { DecodeExpr, DecodeLoadType, PackedFormat } from "@poot/graph-ir";
import { ConfigError, UnsupportedTensorTypeError } from "../errors.js";

/**
 * How an int4 checkpoint packs 8 nibbles into each int32: along the input dim (GPTQ: `qweight` [in/8, out]) or the
 * output dim (AWQ: `qweight` [in, out/8]); `order[k]` is the element (of the 8) held by nibble k (bits 4k..4k+3);
 * zeros are packed along the output dim with the same order; `zeroOffset` is added to each stored zero (GPTQ v1
 * stores zero − 1).
 */
export interface Int4Layout {
  /** Dimension of `qweight` that holds 8 elements per int32. */
  readonly packAxis: "in" | "out";
  /** `order[k]` = element index (0..7) stored in nibble k. */
  readonly order: readonly number[];
  /** Added to each unpacked zero point. */
  readonly zeroOffset: number;
}

/** A parsed `quantization_config`. */
export type HFQuantConfig =
  | {
      readonly method: "gptq" | "awq";
      readonly layout: Int4Layout;
      /** Input elements per (scale, zero) group; -1 means one group per output row. */
      readonly groupSize: number;
      /** Symmetric quantization (GPTQ: zero point 8 when `qzeros` is absent). */
      readonly sym: boolean;
      /** GPTQ act-order (`g_idx` may permute groups). */
      readonly descAct: boolean;
    }
  | {
      readonly method: "fp8";
      /** `[rows, cols]` of one `weight_scale_inv` block (DeepSeek / Qwen FP8), or undefined for tensor/channel scales. */
      readonly blockSize: readonly [number, number] | undefined;
      /** How the checkpoint means its linears' inputs to be quantized (see {@link FP8ActivationScheme}). */
      readonly activations: FP8ActivationScheme;
    };

/**
 * The activation quantization an FP8 checkpoint was made for: `none` (weight-only, W8A16), `static` (one
 * calibrated `input_scale` per linear, x quantized as e4m3(x / input_scale)), `dynamic` (a scale computed from each
 * token's or 128-group's values at run time). poot keeps activations f32 unless told otherwise (decision 2610).
 */
export type FP8ActivationScheme = "none" | "static" | "dynamic";

/** GPTQ's nibble order (element k in nibble k). */
export const GPTQ_LAYOUT_V1: Int4Layout = { packAxis: "in", order: [0, 1, 2, 3, 4, 5, 6, 7], zeroOffset: 1 };
/** AutoAWQ's GEMM packing: nibble k holds element [0, 2, 4, 6, 1, 3, 5, 7][k]. */
export const AWQ_GEMM_LAYOUT: Int4Layout = { packAxis: "out", order: [0, 2, 4, 6, 1, 3, 5, 7], zeroOffset: 0 };

type Json = Record<string, unknown>;
const isObj = (x: unknown): x is Json => typeof x === "object" && x !== null && !Array.isArray(x);

/**
 * Parses a `quantization_config` object (config.json, or quantize_config.json for older GPTQ repos); `undefined`
 * when absent. Unsupported methods and settings are a `ConfigError` / `UnsupportedTensorTypeError` naming the key.
 */
export function parseHFQuantConfig(raw: unknown, file: string): HFQuantConfig | undefined {
  if (raw === undefined || raw === null) return undefined;
  const bad = (key: string, msg: string, value?: unknown): never => {
    throw new ConfigError("bad-config", msg, { file, key: `quantization_config.${key}`, value });
  };
  const unsupported = (key: string, msg: string, value?: unknown): never => {
    throw new UnsupportedTensorTypeError("unsupported-dtype", msg, { file, key: `quantization_config.${key}`, value });
  };
  if (!isObj(raw)) return bad("", "quantization_config must be an object", typeof raw);
  const int = (key: string, dflt?: number): number => {
    const v = raw[key] ?? dflt;
    if (typeof v !== "number" || !Number.isSafeInteger(v)) return bad(key, `${key} must be an integer`, v);
    return v;
  };
  const bool = (key: string, dflt: boolean): boolean => {
    const v = raw[key] ?? dflt;
    if (typeof v !== "boolean") return bad(key, `${key} must be true or false`, v);
    return v;
  };
  const method = raw["quant_method"] ?? (raw["bits"] !== undefined ? "gptq" : undefined);
  if (typeof method !== "string") return bad("quant_method", "quant_method must be a string", method);
  const groupOf = (key: string): number => {
    const g = int(key, -1);
    if (g !== -1 && (g < 32 || g % 32 !== 0))
      return unsupported(key, `group size ${g} is not supported (-1 or a multiple of 32)`, g);
    return g;
  };
  switch (method.toLowerCase()) {
    case "gptq": {
      const bits = int("bits");
      if (bits !== 4) return unsupported("bits", `GPTQ with ${bits} bits is not supported (4 only)`, bits);
      const fmt = raw["checkpoint_format"] ?? "gptq";
      if (fmt !== "gptq" && fmt !== "gptq_v2")
        return unsupported("checkpoint_format", `GPTQ checkpoint_format ${JSON.stringify(fmt)} is not supported`, fmt);
      const layout = fmt === "gptq" ? GPTQ_LAYOUT_V1 : { ...GPTQ_LAYOUT_V1, zeroOffset: 0 };
      return {
        method: "gptq",
        layout,
        groupSize: groupOf("group_size"),
        sym: bool("sym", true),
        descAct: bool("desc_act", false),
      };
    }
    case "awq": {
      const bits = int(raw["bits"] === undefined ? "w_bit" : "bits");
      if (bits !== 4) return unsupported("bits", `AWQ with ${bits} bits is not supported (4 only)`, bits);
      const version = raw["version"] ?? "gemm";
      if (typeof version !== "string" || version.toLowerCase() !== "gemm")
        return unsupported("version", `AWQ version ${JSON.stringify(version)} is not supported (GEMM only)`, version);
      if (!bool("zero_point", true)) return unsupported("zero_point", "AWQ without zero points is not supported");
      const g = groupOf(raw["group_size"] === undefined ? "q_group_size" : "group_size");
      return { method: "awq", layout: AWQ_GEMM_LAYOUT, groupSize: g, sym: false, descAct: false };
    }
    case "fp8": {
      const fmt = raw["fmt"] ?? "e4m3";
      if (fmt !== "e4m3") return unsupported("fmt", `FP8 format ${JSON.stringify(fmt)} is not supported (e4m3)`, fmt);
      const scheme = raw["activation_scheme"] ?? "dynamic";
      if (scheme !== "static" && scheme !== "dynamic")
        return bad("activation_scheme", `activation_scheme must be "static" or "dynamic"`, scheme);
      return {
        method: "fp8",
        blockSize: blockSizeOf(raw["weight_block_size"], "weight_block_size", bad),
        activations: scheme,
      };
    }
    case "compressed-tensors": {
      const groups = raw["config_groups"];
      if (!isObj(groups) || Object.keys(groups).length === 0)
        return bad("config_groups", "compressed-tensors needs config_groups");
      let block: readonly [number, number] | undefined;
      let activations: FP8ActivationScheme = "none";
      for (const [name, g] of Object.entries(groups)) {
        activations = inputActivationsOf(isObj(g) ? g["input_activations"] : undefined, `config_groups.${name}`, {
          bad,
          unsupported,
        });
        const w = isObj(g) ? g["weights"] : undefined;
        if (!isObj(w)) return bad(`config_groups.${name}.weights`, "weights must be an object");
        if (w["type"] !== "float" || w["num_bits"] !== 8)
          return unsupported(
            `config_groups.${name}.weights`,
            `compressed-tensors weights ${JSON.stringify(w["type"])} × ${JSON.stringify(w["num_bits"])} bits are not supported (float 8: FP8 e4m3)`,
          );
        if (w["strategy"] === "block")
          block = blockSizeOf(w["block_structure"], `config_groups.${name}.weights.block_structure`, bad);
        else if (w["strategy"] !== "tensor" && w["strategy"] !== "channel")
          return unsupported(
            `config_groups.${name}.weights.strategy`,
            `FP8 strategy ${JSON.stringify(w["strategy"])} is not supported (tensor, channel, block)`,
          );
      }
      return { method: "fp8", blockSize: block, activations };
    }
    default:
      return unsupported("quant_method", `quantization method ${JSON.stringify(method)} is not supported`, method);
  }
}

type Fail = (key: string, msg: string, value?: unknown) => never;

/** compressed-tensors `input_activations`: absent or null (weight-only), float 8 static per tensor, or dynamic. */
function inputActivationsOf(
  a: unknown,
  key: string,
  fail: { readonly bad: Fail; readonly unsupported: Fail },
): FP8ActivationScheme {
  if (a === undefined || a === null) return "none";
  const at = `${key}.input_activations`;
  if (!isObj(a)) return fail.bad(at, "input_activations must be an object or null", a);
  if (a["type"] !== "float" || a["num_bits"] !== 8)
    return fail.unsupported(
      at,
      `input activations ${JSON.stringify(a["type"])} × ${JSON.stringify(a["num_bits"])} bits are not supported (float 8)`,
    );
  if (a["dynamic"] === true) return "dynamic";
  if (a["dynamic"] !== false && a["dynamic"] !== undefined)
    return fail.bad(`${at}.dynamic`, "dynamic must be true or false", a["dynamic"]);
  if (a["strategy"] !== "tensor")
    return fail.unsupported(
      `${at}.strategy`,
      `static input activations with strategy ${JSON.stringify(a["strategy"])} are not supported (tensor)`,
      a["strategy"],
    );
  return "static";
}

function blockSizeOf(
  v: unknown,
  key: string,
  bad: (key: string, msg: string, value?: unknown) => never,
): readonly [number, number] | undefined {
  if (v === undefined || v === null) return undefined;
  if (
    !Array.isArray(v) ||
    v.length !== 2 ||
    !v.every((d) => typeof d === "number" && Number.isSafeInteger(d) && d > 0 && d <= 1 << 20)
  )
    return bad(key, `${key} must be [rows, cols] of positive integers`, v);
  return [v[0] as number, v[1] as number];
}

// ── the block formats weights are re-blocked into (32 input elements of one output row per block) ──
const c = (value: number): DecodeExpr => ({ op: "const", value });
const I: DecodeExpr = { op: "i" };
type Bin = "add" | "sub" | "mul" | "shl" | "shr" | "and" | "lt";
const op = (o: Bin, a: DecodeExpr | number, b: DecodeExpr | number): DecodeExpr => ({
  op: o,
  a: typeof a === "number" ? c(a) : a,
  b: typeof b === "number" ? c(b) : b,
});
const ld = (type: DecodeLoadType, at: DecodeExpr | number): DecodeExpr => ({
  op: "load",
  type,
  offset: typeof at === "number" ? c(at) : at,
});
const f32 = (a: DecodeExpr): DecodeExpr => ({ op: "f32", a });
const sel = (cond: DecodeExpr, a: DecodeExpr, b: DecodeExpr): DecodeExpr => ({ op: "select", cond, a, b });
const let_ = (name: string, value: DecodeExpr, body: DecodeExpr): DecodeExpr => ({ op: "let", name, value, body });
const v = (name: string): DecodeExpr => ({ op: "var", name });

/** Storage types of a scale field (the checkpoint's own, widened never). */
export type ScaleType = "f16" | "bf16" | "f32";
const SCALE_BYTES: Record<ScaleType, number> = { f16: 2, bf16: 2, f32: 4 };

/** Elements per block of every HF-derived format. */
export const HF_BLOCK = 32;

// Nibble of element i from 16 bytes at `at`: byte i >> 1, low nibble for even i.
const nib = (at: number): DecodeExpr =>
  op("and", op("shr", ld("u8", op("add", op("shr", I, 1), at)), op("mul", op("and", I, 1), 4)), 15);

/**
 * int4 with one (scale, zero) per block: [scale][u8 zero][pad to a multiple of 4][16 bytes of nibbles];
 * x_i = (q_i − zero)·scale, exact in f32 (GPTQ, AWQ with groups that are multiples of 32).
 */
function int4Group(scale: ScaleType): PackedFormat {
  const s = SCALE_BYTES[scale],
    qAt = s === 4 ? 8 : 4;
  return {
    name: `int4zp_${scale}`,
    blockSize: HF_BLOCK,
    bytesPerBlock: qAt + 16,
    decode: op("mul", f32(op("sub", nib(qAt), ld("u8", s))), ld(scale, 0)),
  };
}

/**
 * int4 with a (scale, zero) per element (GPTQ act-order, whose `g_idx` gives each input its own group):
 * [32 scales][32 u8 zeros][16 bytes of nibbles]; x_i = (q_i − zero_i)·scale_i.
 */
function int4Element(scale: ScaleType): PackedFormat {
  const s = SCALE_BYTES[scale];
  const zAt = HF_BLOCK * s,
    qAt = zAt + HF_BLOCK;
  return {
    name: `int4zpx_${scale}`,
    blockSize: HF_BLOCK,
    bytesPerBlock: qAt + 16,
    decode: op("mul", f32(op("sub", nib(qAt), ld("u8", op("add", I, zAt)))), ld(scale, op("mul", I, s))),
  };
}

/**
 * FP8 e4m3 (OCP "fn": no infinities, 0x7f/0xff NaN, refused when re-blocking) with an f32 scale per block:
 * [f32 scale][32 bytes]; magnitude (e ? (8+m) << e : m << 1)·2^−10, x_i = ±magnitude·scale.
 */
const FP8_E4M3: PackedFormat = {
  name: "fp8e4m3",
  blockSize: HF_BLOCK,
  bytesPerBlock: 4 + HF_BLOCK,
  decode: let_(
    "b",
    ld("u8", op("add", I, 4)),
    let_(
      "e",
      op("and", op("shr", v("b"), 3), 15),
      let_(
        "m",
        op("and", v("b"), 7),
        let_(
          "mag",
          sel(op("lt", v("e"), 1), op("shl", v("m"), 1), op("shl", op("add", v("m"), 8), v("e"))),
          op(
            "mul",
            op("mul", f32(sel(op("lt", v("b"), 128), v("mag"), op("sub", 0, v("mag")))), c(2 ** -10)),
            ld("f32", 0),
          ),
        ),
      ),
    ),
  ),
};

const FORMATS: ReadonlyMap<string, PackedFormat> = new Map(
  [...(["f16", "bf16", "f32"] as const).flatMap((s) => [int4Group(s), int4Element(s)]), FP8_E4M3].map((f) => [
    f.name,
    f,
  ]),
);

/** The PackedFormat of an HF-derived storage type (`int4zp_f16`, `int4zpx_bf16`, `fp8e4m3`, ...), or null. */
export function hfPackedFormat(type: string): PackedFormat | null {
  return FORMATS.get(type) ?? null;
}

/** Every HF-derived packed format (for per-format kernel tests). */
export const HF_PACKED_FORMATS: readonly PackedFormat[] = [...FORMATS.values()];

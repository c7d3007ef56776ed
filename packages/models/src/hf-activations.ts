// How quantized linears see their inputs (decision 2610): f32 (default), or an FP8 checkpoint's activation
// quantization, static (`input_scale`) or dynamic (a scale per token or per group), checked against the checkpoint.
import { numel, type Checkpoint, type TensorInfo } from "./checkpoint.js";
import { ConfigError, ModelError } from "./errors.js";
import { widenFloats } from "./halfs.js";
import type { HFQuantConfig } from "./quant/hf-formats.js";

/**
 * How the linears of a quantized checkpoint see their inputs (decision 2610):
 * - `f32` (the default): activations stay f32 whatever the checkpoint's activation scheme (llama.cpp's and
 *   transformers' dequantized numerics); an FP8 checkpoint's `input_scale`s are not read.
 * - `fp8-static`: an FP8 checkpoint's calibrated per-tensor `input_scale`s applied as vLLM and compressed-tensors do,
 *   x → e4m3(clamp(x / s, ±448)) · s before each FP8 linear; every FP8 linear must have one.
 * - `fp8-dynamic`: a checkpoint made for dynamic activation quantization (`activation_scheme: dynamic`, or dynamic
 *   `input_activations`) quantized as transformers' FP8Linear does: per group of `weight_block_size[1]` inputs
 *   (per token without blocks), scale max|x_group| / 448.
 */
export type ActivationNumerics = "f32" | "fp8-static" | "fp8-dynamic";

/** Options of {@link withHFQuantization} and {@link QuantizedHFCheckpoint}. */
export interface HFQuantOptions {
  /** Activation numerics (default `f32`). */
  readonly activations?: ActivationNumerics;
}

/** `activations` checked against the checkpoint's quantization (undefined: not quantized); a ConfigError names it. */
export function checkActivations(
  activations: ActivationNumerics | undefined,
  quant: HFQuantConfig | undefined,
  file: string,
): ActivationNumerics {
  const a = activations ?? "f32";
  const fail = (msg: string): never => {
    throw new ConfigError("bad-config", msg, { file, key: "activations", value: a });
  };
  if (a !== "f32" && a !== "fp8-static" && a !== "fp8-dynamic")
    return fail(`activations must be f32, fp8-static or fp8-dynamic, got ${String(a)}`);
  if (a === "f32") return a;
  if (quant?.method !== "fp8")
    return fail(`activations ${a} need an FP8 checkpoint, this one is ${quant?.method ?? "not quantized"}`);
  if (a === "fp8-dynamic" && quant.activations !== "dynamic")
    return fail(
      `activations fp8-dynamic need a checkpoint made for dynamic activations; its scheme is ${quant.activations}`,
    );
  return a;
}

/** `activations` for a GGUF file, which holds no FP8 checkpoint: anything but f32 is a ConfigError naming it. */
export function checkGGUFActivations(activations: ActivationNumerics | undefined, file: string): void {
  const a = activations ?? "f32";
  if (a !== "f32")
    throw new ConfigError("bad-config", `activations ${a} need an FP8 Hugging Face checkpoint; a GGUF file has none`, {
      file,
      key: "activations",
      value: a,
    });
}

/** The TensorInfo fields of an FP8 weight `w` [out, in] that tell `linear` how to quantize its input. */
export function inputQuantization(
  activations: ActivationNumerics,
  ck: Checkpoint,
  w: TensorInfo,
  block: readonly [number, number] | undefined,
): { readonly inputScale?: number; readonly inputGroup?: number } {
  const base = w.name.slice(0, -".weight".length);
  if (activations === "fp8-static") return { inputScale: staticInputScale(ck, base, w.file) };
  if (activations !== "fp8-dynamic") return {};
  const inDim = w.shape[1]!;
  const group = block === undefined ? inDim : block[1];
  if (inDim % group !== 0)
    throw new ModelError("bad-shape", `dynamic activation groups of ${group} do not divide the input size ${inDim}`, {
      file: w.file,
      tensor: w.name,
      value: w.shape,
    });
  return { inputGroup: group };
}

/** A linear's static activation scale (`<base>.input_scale`, one finite positive value); a typed error otherwise. */
function staticInputScale(ck: Checkpoint, base: string, file: string): number {
  const name = `${base}.input_scale`;
  if (!ck.has(name))
    throw new ModelError(
      "missing-tensor",
      `no tensor named "${name}": activations fp8-static need every FP8 linear's input_scale`,
      { file, tensor: name },
    );
  const t = ck.info(name);
  if (!["F32", "BF16", "F16"].includes(t.dtype))
    throw new ModelError("wrong-dtype", `expected F32 | BF16 | F16, found ${t.dtype}`, { file: t.file, tensor: name });
  if (numel(t.shape) !== 1)
    throw new ModelError("bad-shape", `expected one per-tensor scale, found [${t.shape}] (static per-tensor only)`, {
      file: t.file,
      tensor: name,
      value: t.shape,
    });
  const s = widenFloats(t.dtype, ck.readSync(name))[0]!;
  if (!(Number.isFinite(s) && s > 0))
    throw new ModelError("bad-weight", `input_scale ${s} is not a finite positive number`, {
      file: t.file,
      tensor: name,
      offset: t.byteOffset,
    });
  return s;
}

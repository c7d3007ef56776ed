// FP8 static activation quantization (decision 2610) traced to primitives: the value a linear's input takes in a
// W8A8 FP8 checkpoint's intended numerics (vLLM's static scaled_fp8_quant, compressed-tensors' static tensor scale).
import type { Builder, Ref } from "@poot/graph-ir";
import { TraceError } from "../errors.js";

/** Largest finite e4m3 ("fn") magnitude; activations beyond ±448·scale saturate. */
export const E4M3_MAX = 448;

/**
 * x → e4m3(clamp(x / scale, ±448)) · scale elementwise, f32 in and out, rounding to nearest, ties to even, exactly as
 * a cast to float8_e4m3fn does (subnormals below 2^-6, spacing 2^-9). Built from primitives only, so every backend
 * runs it with nothing per target: the exponent's spacing `ulp` is picked by comparisons against the 15 binade
 * bounds (y / ulp is then exact), the integer part truncated by a cast to i32 and rounded up past half or at half
 * when odd.
 */
export function fp8StaticQuantize(b: Builder, x: Ref, scale: number | Ref): Ref {
  const y = b.min(b.max(b.div(x, scale), -E4M3_MAX), E4M3_MAX);
  const a = b.unary("Abs", y);
  // Spacing of e4m3 values at |y|: 2^-9 in the subnormal binade and the first normal one, 2^(e-3) in binade e.
  let ulp = b.select(b.cmp("Ge", a, 2 ** -5), b.lit(2 ** -8, "f32"), b.lit(2 ** -9, "f32"));
  for (let e = -4; e <= 8; e++) ulp = b.select(b.cmp("Ge", a, 2 ** e), 2 ** (e - 3), ulp);
  const t = b.div(a, ulp); // in [0, 16]: exact (a power-of-two divisor)
  const whole = b.cast(t, "i32");
  const floor = b.cast(whole, "f32");
  const frac = b.sub(t, floor);
  const odd = b.cmp("Eq", b.bit("And", whole, 1), 1);
  const up = b.bit("Or", b.cmp("Gt", frac, 0.5), b.bit("And", b.cmp("Eq", frac, 0.5), odd));
  const q = b.mul(b.add(floor, b.select(up, b.lit(1, "f32"), b.lit(0, "f32"))), ulp);
  return b.mul(b.select(b.cmp("Lt", y, 0), b.neg(q), q), scale);
}

/**
 * Dynamic FP8 activation quantization (decision 2610), as transformers' FP8Linear (`activation_scheme: dynamic`) runs
 * fine-grained FP8 checkpoints: the last axis of x [N, K] split into groups of `group` consecutive elements (K when
 * per token), each quantized with its own scale max|x_group| / 448 by {@link fp8StaticQuantize}. An all-zero group
 * gets the smallest normal f32 as its scale (so it stays 0, where a division by 0 would give NaN).
 */
export function fp8DynamicQuantize(b: Builder, x: Ref, group: number): Ref {
  const [n, k] = x.shape as [number, number];
  const groups = Math.ceil(k / group);
  if (groups * group !== k)
    throw new TraceError("bad-weight", `dynamic FP8 activation groups of ${group} do not divide the input size ${k}`, {
      value: group,
    });
  const g = b.reshape(x, [n, groups, group]);
  const amax = b.reduce("max", b.unary("Abs", g), [2], true);
  const scale = b.max(b.div(amax, E4M3_MAX), 2 ** -126);
  return b.reshape(fp8StaticQuantize(b, g, scale), [n, k]);
}

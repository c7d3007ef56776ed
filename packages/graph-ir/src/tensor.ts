// Runtime tensors of the reference evaluator: float dtypes hold float64 values already rounded to the
// storage type; integer dtypes hold their own typed arrays; packed tensors hold raw bytes.

import { f16BitsToF32, bf16BitsToF32, roundToBf16, roundToF16 } from "./convert.js";
import { isPacked, storageBytes, type DType, type ScalarDType } from "./dtype.js";
import { invariant } from "./errors.js";
import { numel, type Shape } from "./shape.js";

/** Element storage of an evaluator tensor. */
export type TensorData = Float64Array | Int32Array | Uint32Array | Uint8Array;

/** An evaluator tensor. */
export interface Tensor {
  /** Element type. */
  readonly dtype: DType;
  /** Shape. */
  readonly shape: Shape;
  /** Values (float dtypes: rounded float64; packed: bytes). */
  readonly data: TensorData;
}

/** Allocates a zeroed data array for `dtype` with `n` elements. */
export function allocData(dtype: DType, n: number): TensorData {
  if (isPacked(dtype)) return new Uint8Array(storageBytes(dtype, n));
  switch (dtype) {
    case "f32":
    case "f16":
    case "bf16":
      return new Float64Array(n);
    case "i32":
      return new Int32Array(n);
    case "u32":
      return new Uint32Array(n);
    case "u8":
    case "bool":
      return new Uint8Array(n);
    default:
      return dtype satisfies never;
  }
}

/** Rounds float data in place to what a store of `dtype` holds; bool is normalized to 0/1. */
export function roundInPlace(dtype: ScalarDType, data: TensorData): void {
  switch (dtype) {
    case "f32":
      for (let i = 0; i < data.length; i++) data[i] = Math.fround(data[i]!);
      return;
    case "f16":
      for (let i = 0; i < data.length; i++) data[i] = roundToF16(data[i]!);
      return;
    case "bf16":
      for (let i = 0; i < data.length; i++) data[i] = roundToBf16(data[i]!);
      return;
    case "bool":
      for (let i = 0; i < data.length; i++) data[i] = data[i] !== 0 ? 1 : 0;
      return;
    case "i32":
    case "u32":
    case "u8":
      // Integer typed arrays already wrap on store.
      return;
    default:
      dtype satisfies never;
  }
}

/** Host data accepted for a binding: numbers, or raw bits (Uint16Array for f16/bf16, bytes for packed). */
export type HostData = ArrayLike<number> | Uint16Array;

/** Converts host data into a tensor of `dtype`/`shape`; returns null when the element count is wrong. */
export function tensorFromHost(dtype: DType, shape: Shape, host: HostData): Tensor | null {
  const n = numel(shape);
  if (isPacked(dtype)) {
    const bytes = storageBytes(dtype, n);
    if (!(host instanceof Uint8Array) || host.length !== bytes) return null;
    return { dtype, shape, data: host };
  }
  if (host.length !== n) return null;
  const data = allocData(dtype, n);
  if ((dtype === "f16" || dtype === "bf16") && host instanceof Uint16Array) {
    // Raw bits: widen exactly.
    const widen = dtype === "f16" ? f16BitsToF32 : bf16BitsToF32;
    for (let i = 0; i < n; i++) data[i] = widen(host[i]!);
    return { dtype, shape, data };
  }
  for (let i = 0; i < n; i++) data[i] = host[i]!;
  roundInPlace(dtype, data);
  return { dtype, shape, data };
}

/** Converts Computed stored data into an evaluator tensor. */
export function tensorFromStored(dtype: DType, shape: Shape, stored: ArrayLike<number>): Tensor {
  const t = tensorFromHost(dtype, shape, stored);
  invariant(t !== null, "computed data length was validated");
  return t;
}

/** Reads element `i` of a tensor as a number. */
export function at(t: Tensor, i: number): number {
  return t.data[i]!;
}

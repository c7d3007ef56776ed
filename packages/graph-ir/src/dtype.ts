// Element types: scalar dtypes (compute/storage) and packed weight storage described by a format.
// bf16/f16 are storage-only: they are widened on read and rounded on write.

import type { PackedFormat } from "./packed.js";

/** Scalar element types. */
export type ScalarDType = "f32" | "f16" | "bf16" | "i32" | "u32" | "u8" | "bool";

/** Packed (block-quantized) weight storage; the descriptor travels with the type. */
export interface PackedDType {
  /** The block format, as data. */
  readonly packed: PackedFormat;
}

/** Any element type of a graph value. */
export type DType = ScalarDType | PackedDType;

/** All scalar dtypes, in a stable order. */
export const SCALAR_DTYPES: readonly ScalarDType[] = ["f32", "f16", "bf16", "i32", "u32", "u8", "bool"];

/** True for packed storage types. */
export function isPacked(d: DType): d is PackedDType {
  return typeof d === "object";
}

/** True for f32/f16/bf16. */
export function isFloat(d: DType): d is "f32" | "f16" | "bf16" {
  return d === "f32" || d === "f16" || d === "bf16";
}

/** True for i32/u32/u8. */
export function isInt(d: DType): d is "i32" | "u32" | "u8" {
  return d === "i32" || d === "u32" || d === "u8";
}

/** True when `d` is a known scalar dtype name. */
export function isScalarDType(d: unknown): d is ScalarDType {
  return typeof d === "string" && (SCALAR_DTYPES as readonly string[]).includes(d);
}

/** Structural dtype equality (packed types compare by format name). */
export function dtypeEquals(a: DType, b: DType): boolean {
  if (isPacked(a) || isPacked(b)) return isPacked(a) && isPacked(b) && a.packed.name === b.packed.name;
  return a === b;
}

/** Printable name: `f32`, `packed:q8_0`. */
export function dtypeName(d: DType): string {
  return isPacked(d) ? `packed:${d.packed.name}` : d;
}

/** Bytes per element of a scalar dtype (bool is stored as one byte). */
export function scalarByteSize(d: ScalarDType): number {
  switch (d) {
    case "f32":
    case "i32":
    case "u32":
      return 4;
    case "f16":
    case "bf16":
      return 2;
    case "u8":
    case "bool":
      return 1;
    default:
      return d satisfies never;
  }
}

/** Storage bytes of a tensor with `numel` elements (packed: whole blocks along the last axis). */
export function storageBytes(d: DType, numel: number): number {
  if (isPacked(d)) return (numel / d.packed.blockSize) * d.packed.bytesPerBlock;
  return numel * scalarByteSize(d);
}

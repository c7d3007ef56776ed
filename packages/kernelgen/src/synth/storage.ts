// Storage dtypes of synthesized kernels' tensors and how they map to kernel IR buffers: which element type a
// buffer has, what value type a load produces, and the conversions at load and store.

import type { Arr, Builder, ElemType, Val } from "@poot/kernel-dsl";
import { KernelgenError } from "../errors.js";
import type { ExprType } from "./expr.js";

/** Dtypes a synthesized kernel reads or writes (graph-ir scalar dtypes; bool is stored as a u8 0/1). */
export type StorageDType = "f32" | "bf16" | "f16" | "i32" | "u32" | "u8" | "bool";

/** Buffer element type of a storage dtype. */
export function elemOf(d: StorageDType): ElemType {
  return d === "bool" ? "u8" : d;
}

/** Expression type a load of `d` produces. */
export function valueTypeOf(d: StorageDType): ExprType {
  switch (d) {
    case "f32":
    case "bf16":
    case "f16":
      return "f32";
    case "i32":
      return "i32";
    case "u32":
    case "u8":
      return "u32";
    case "bool":
      return "bool";
    default:
      return d satisfies never;
  }
}

/** Throws `bad_dtype` unless `d` is a storage dtype. */
export function checkDType(
  synth: string,
  param: string,
  d: string,
  allowed: readonly StorageDType[] = ["f32", "bf16", "f16", "i32", "u32", "u8", "bool"],
): StorageDType {
  if (!(allowed as readonly string[]).includes(d))
    throw new KernelgenError("bad_dtype", `dtype ${d} is not accepted (${allowed.join(", ")})`, {
      synth,
      param,
      value: d,
    });
  return d as StorageDType;
}

/** Loads element `i` of `buf` (dtype `d`) as its expression type. */
export function loadAs(buf: Arr, d: StorageDType, i: Val<"u32">): Val<ExprType> {
  const v = buf.at(i) as Val<ExprType>;
  return d === "bool" ? (v as Val<"u32">).ne(0) : v;
}

/** Stores `v` (the expression type of `d`) to element `i` of `buf`. */
export function storeAs(k: Builder, buf: Arr, d: StorageDType, i: Val<"u32">, v: Val<ExprType>): void {
  const value = d === "bool" ? k.select(v as Val<"bool">, k.u32(1), k.u32(0)) : v;
  (buf as Arr<"f32">).set(i, value as Val<"f32">);
}

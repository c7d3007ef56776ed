// LLVM IR spellings of the kernel IR's value types and f32 constants, shared by the LLVM targets' instruction
// selection (llvm.ts, llvm-math.ts).

import { elemOf, lanesOf, type ElemType, type ValueType } from "@poot/kernel-dsl";

/** LLVM type of an IR value type. */
export function llType(t: ValueType | ElemType): string {
  const scalar = (e: string): string =>
    e === "bool"
      ? "i1"
      : e === "f32"
        ? "float"
        : e === "f16"
          ? "half"
          : e === "bf16" || e === "i16"
            ? "i16"
            : e === "u8" || e === "i8"
              ? "i8"
              : "i32";
  const n = lanesOf(t);
  return n === 1 ? scalar(t) : `<${n} x ${scalar(elemOf(t as ValueType))}>`;
}

/** LLVM spelling of an f32 constant: the double with the same value, in hex (exact). */
export function llFloat(v: number): string {
  const d = new DataView(new ArrayBuffer(8));
  d.setFloat64(0, Math.fround(v));
  return `0x${d.getBigUint64(0).toString(16).toUpperCase().padStart(16, "0")}`;
}

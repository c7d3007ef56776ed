// Helpers over the kernel IR's types (ir.ts), shared by every consumer: vector lanes and elements, the types a load
// widens to and a SIMD load produces, storage bytes.

import type { ElemType, ValueType, VecType, VecElem, VecLanes, ScalarType, LoadVecType } from "./ir.js";

/** True for vector types (vec2, vec4, vec8, vec16). */
export function isVecType(t: ElemType | ValueType): t is VecType {
  return t.startsWith("vec");
}

/** Element type of a vector, or the type itself for scalars. */
export function elemOf(t: VecType): VecElem;
export function elemOf(t: ValueType): ScalarType;
export function elemOf(t: ValueType): ScalarType {
  return isVecType(t) ? (t.slice(t.indexOf("<") + 1, -1) as VecElem) : t;
}

/** Number of lanes: 2, 4, 8 or 16 for vectors, 1 for scalars. */
export function lanesOf(t: ElemType | ValueType): 1 | VecLanes {
  return isVecType(t) ? (Number(t.slice(3, t.indexOf("<"))) as VecLanes) : 1;
}

/** The vector type of `lanes` lanes of `elem`. */
export function vecType<E extends VecElem, N extends VecLanes>(elem: E, lanes: N): `vec${N}<${E}>` {
  return `vec${lanes}<${elem}>`;
}

/**
 * The types a `load4` of `lanes` (default 4) elements of a buffer of scalar element `elem` may produce (8-bit
 * storage: either extension).
 */
export function load4Types(elem: ElemType, lanes: 4 | 8 | 16 = 4): readonly LoadVecType[] {
  if (isVecType(elem)) return [];
  if (elem === "u8" || elem === "i8") return [`vec${lanes}<u32>`, `vec${lanes}<i32>`];
  return [`vec${lanes}<${widenedType(elem) as VecElem}>`];
}

/** The value type a load of `elem` produces (storage-only types widen). */
export function widenedType(elem: ElemType): Exclude<ValueType, "bool"> {
  switch (elem) {
    case "bf16":
    case "f16":
      return "f32";
    case "u8":
      return "u32";
    case "i8":
      return "i32";
    default:
      return elem;
  }
}

/** Size in bytes of one element in storage. */
export function elemBytes(elem: ElemType): number {
  switch (elem) {
    case "u8":
    case "i8":
      return 1;
    case "bf16":
    case "f16":
      return 2;
    default:
      return 4 * lanesOf(elem);
  }
}

// The primitive op table: one `as const` object, grouped by family, each entry an OpDef whose
// typing rule and reference semantics sit side by side in its module. Composite ops extend a copy.

import {
  Abs,
  Add,
  And,
  Cast,
  Cos,
  Div,
  Eq,
  Erf,
  Exp,
  Ge,
  Gt,
  Le,
  Log,
  Lt,
  Max,
  Min,
  Mul,
  Ne,
  Neg,
  Not,
  Or,
  Pow,
  Recip,
  Select,
  Shl,
  Shr,
  Sin,
  Sqrt,
  Sub,
  Tanh,
  Xor,
} from "./elementwise.js";
import { DecodePacked, Iota, MatMul } from "./linalg.js";
import { Broadcast, Concat, DynamicSlice, DynamicUpdateSlice, Gather, Reshape, Slice, Transpose } from "./movement.js";
import { GraphError } from "../errors.js";
import type { OpDef, OpTable } from "./opdef.js";
import { Reduce } from "./reduce.js";

/** Every primitive op that tracers may emit. */
export const PRIMITIVE_OPS = {
  // ── elementwise: binary arithmetic (numpy broadcasting, operands of one dtype) ──
  Add,
  Sub,
  Mul,
  Div,
  Max,
  Min,
  Pow,
  // ── elementwise: comparisons (-> bool) ──
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  // ── elementwise: bit ops (i32/u32/bool; shifts i32/u32) ──
  And,
  Or,
  Xor,
  Shl,
  Shr,
  // ── elementwise: unary ──
  Neg,
  Exp,
  Log,
  Sqrt,
  Recip,
  Tanh,
  Erf,
  Sin,
  Cos,
  Abs,
  Not,
  // ── elementwise: selection and conversion ──
  Select,
  Cast,
  // ── reduce ──
  Reduce,
  // ── movement (Reshape/Slice/Broadcast/Transpose are views: dispatchCount 0) ──
  Reshape,
  Slice,
  Broadcast,
  Transpose,
  Concat,
  Gather,
  DynamicSlice,
  DynamicUpdateSlice,
  // ── linear algebra ──
  MatMul,
  // ── sources ──
  Iota,
  // ── packed weights ──
  DecodePacked,
} as const satisfies OpTable;

/** Names of the primitive ops. */
export type PrimitiveOp = keyof typeof PRIMITIVE_OPS;

/** Returns a new op table: the primitives plus `extra` (composite ops); a name clash throws `duplicate-op`. */
export function extendOps(extra: { readonly [name: string]: OpDef<any> }, base: OpTable = PRIMITIVE_OPS): OpTable {
  for (const k of Object.keys(extra))
    if (Object.hasOwn(base, k)) throw new GraphError("duplicate-op", `op ${k} is already defined`, { op: k });
  return { ...base, ...extra };
}

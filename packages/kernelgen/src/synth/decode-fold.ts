// Generation-time values of a packed format's decode recipe (the unrolled CPU decoders, decode-unrolled.ts and
// decode-lanes.ts): a value is a known constant with its recipe type or an emitted IR value, and binary ops on two
// constants fold following the reference decoder's typing rules.

import type { Val } from "@poot/kernel-dsl";

/** The recipe's scalar types. */
export type Kind = "i32" | "u32" | "f32";
/** An emitted IR value of a recipe type. */
export type V = Val<Kind>;
/** A value known at generation time (with the recipe type it would have), or an emitted IR value. */
export type C = { readonly c: number; readonly t: Kind } | V;

/** Whether `x` is known at generation time. */
export const isConst = (x: C): x is { c: number; t: Kind } => "c" in x;
/** The IR value of a non-constant (callers test {@link isConst} first). */
export const dyn = (x: C): V => x as V;
/** f32 rounding of a folded float. */
export const f = Math.fround;

/** Floor division / modulo of integers, as the reference decoder computes them (division by zero gives 0). */
function floorDivMod(x: number, y: number, op: "idiv" | "mod"): number {
  if (y === 0) return 0;
  const q = Math.floor(x / y);
  return op === "idiv" ? q | 0 : (x - q * y) | 0;
}

/** Folds a binary op on two known values following the recipe's integer/float typing rules. */
export function fold(
  op: string,
  a: { c: number; t: Kind },
  b: { c: number; t: Kind },
): { c: number; t: Kind } | undefined {
  if (op === "shl" || op === "shr" || op === "and" || op === "or" || op === "xor") {
    const x = a.c >>> 0,
      y = b.c >>> 0;
    const r =
      op === "shl" ? x << (y & 31) : op === "shr" ? x >>> (y & 31) : op === "and" ? x & y : op === "or" ? x | y : x ^ y;
    return { c: r >>> 0, t: "u32" };
  }
  if (op === "div" || a.t === "f32" || b.t === "f32") {
    const x = f(a.c),
      y = f(b.c);
    switch (op) {
      case "add":
        return { c: f(x + y), t: "f32" };
      case "sub":
        return { c: f(x - y), t: "f32" };
      case "mul":
        return { c: f(x * y), t: "f32" };
      case "div":
        return { c: f(x / y), t: "f32" };
      case "lt":
        return { c: x < y ? 1 : 0, t: "i32" };
      default:
        return undefined; // float idiv/mod/min/max: emitted, as the general decoder does
    }
  }
  const x = a.t === "u32" ? a.c | 0 : a.c,
    y = b.t === "u32" ? b.c | 0 : b.c;
  switch (op) {
    case "add":
      return { c: (x + y) | 0, t: "i32" };
    case "sub":
      return { c: (x - y) | 0, t: "i32" };
    case "mul":
      return { c: Math.imul(x, y), t: "i32" };
    case "idiv":
    case "mod":
      return { c: floorDivMod(x, y, op), t: "i32" };
    case "lt":
      return { c: x < y ? 1 : 0, t: "i32" };
    case "min":
      return { c: Math.min(x, y), t: "i32" };
    case "max":
      return { c: Math.max(x, y), t: "i32" };
    default:
      return undefined;
  }
}

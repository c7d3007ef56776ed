// The small language the GGML decode recipes are written in: constructors of graph-ir DecodeExpr trees over one
// block's bytes (element index `i`, loads, integer and f32 arithmetic, let-bound names) and shared sub-expressions.
import type { DecodeExpr, DecodeLoadType } from "@poot/graph-ir";

export const c = (value: number): DecodeExpr => ({ op: "const", value });
export const I: DecodeExpr = { op: "i" };
export const ld = (type: DecodeLoadType, offset: DecodeExpr | number): DecodeExpr => ({
  op: "load",
  type,
  offset: typeof offset === "number" ? c(offset) : offset,
});
export type Bin = "add" | "sub" | "mul" | "idiv" | "mod" | "shl" | "shr" | "and" | "or" | "lt";
export const op = (o: Bin, a: DecodeExpr | number, b: DecodeExpr | number): DecodeExpr => ({
  op: o,
  a: typeof a === "number" ? c(a) : a,
  b: typeof b === "number" ? c(b) : b,
});
export const sel = (cond: DecodeExpr, a: DecodeExpr, b: DecodeExpr): DecodeExpr => ({ op: "select", cond, a, b });
export const f32 = (a: DecodeExpr): DecodeExpr => ({ op: "f32", a });
export const let_ = (name: string, value: DecodeExpr, body: DecodeExpr): DecodeExpr => ({
  op: "let",
  name,
  value,
  body,
});
export const v = (name: string): DecodeExpr => ({ op: "var", name });

// Low nibble for elements 0..15 of a 32-block, high nibble for 16..31, from byte qs[i mod 16].
export const nibble32 = (qsOffset: number): DecodeExpr =>
  let_(
    "byte",
    ld("u8", op("add", op("mod", I, 16), qsOffset)),
    sel(op("lt", I, 16), op("and", v("byte"), 15), op("shr", v("byte"), 4)),
  );

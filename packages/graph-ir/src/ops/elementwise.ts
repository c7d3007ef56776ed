// Elementwise op definitions: binary (numpy broadcasting), comparisons, bit ops, unary, Select, Cast.
// Reference semantics run in float64 on float dtypes; integer results wrap like the storage type.

import { dtypeEquals, dtypeName, isFloat, isPacked, isScalarDType, type DType, type ScalarDType } from "../dtype.js";
import type { ValueType } from "../graph.js";
import { broadcastIndex, broadcastShapes, numel, shapeString } from "../shape.js";
import { allocData, type Tensor, type TensorData } from "../tensor.js";
import { erf } from "./erf.js";
import { ALL_SCALAR, requireDType, type OpContext, type OpDef } from "./opdef.js";

/** A scalar function specialized for the output dtype. */
type Fn2 = (x: number, y: number) => number;
type Fn1 = (x: number) => number;

function broadcastAll(ctx: OpContext, types: readonly ValueType[]): number[] {
  let shape: number[] = [];
  for (const t of types) {
    const s = broadcastShapes(shape, t.shape);
    if (s === null)
      ctx.fail("shape-mismatch", `cannot broadcast ${types.map((x) => shapeString(x.shape)).join(" with ")}`);
    shape = s;
  }
  return shape;
}

function sameDType(ctx: OpContext, types: readonly ValueType[]): DType {
  const d = types[0]!.dtype;
  for (const t of types) {
    if (!dtypeEquals(t.dtype, d))
      ctx.fail("dtype-mismatch", `operand dtypes differ: ${types.map((x) => dtypeName(x.dtype)).join(" vs ")}`);
  }
  return d;
}

/** Applies `fn` over broadcast inputs into `out`. */
function map2(a: Tensor, b: Tensor, outShape: readonly number[], out: TensorData, fn: Fn2): void {
  const n = numel(outShape);
  const ia = broadcastIndex(outShape, a.shape),
    ib = broadcastIndex(outShape, b.shape);
  const ad = a.data,
    bd = b.data;
  if (ia === null && ib === null) for (let k = 0; k < n; k++) out[k] = fn(ad[k]!, bd[k]!);
  else if (ia === null) for (let k = 0; k < n; k++) out[k] = fn(ad[k]!, bd[ib![k]!]!);
  else if (ib === null) for (let k = 0; k < n; k++) out[k] = fn(ad[ia[k]!]!, bd[k]!);
  else for (let k = 0; k < n; k++) out[k] = fn(ad[ia[k]!]!, bd[ib[k]!]!);
}

/** A binary arithmetic op: same-dtype operands, broadcast shapes, result of the operand dtype. */
function binary(doc: string, allowed: readonly string[], fn: (d: ScalarDType) => Fn2): OpDef {
  return {
    arity: 2,
    category: "elementwise",
    view: false,
    doc,
    infer(inputs, _p, ctx) {
      const d = sameDType(ctx, inputs);
      requireDType(ctx, "operand", d, allowed);
      return { dtype: d, shape: broadcastAll(ctx, inputs) };
    },
    evaluate([a, b], _p, out) {
      const data = allocData(out.dtype, numel(out.shape));
      map2(a!, b!, out.shape, data, fn(out.dtype as ScalarDType));
      return data;
    },
  };
}

/** A comparison: same-dtype operands, bool result. */
function compare(doc: string, fn: Fn2): OpDef {
  return {
    arity: 2,
    category: "elementwise",
    view: false,
    doc,
    infer(inputs, _p, ctx) {
      const d = sameDType(ctx, inputs);
      requireDType(ctx, "operand", d, ALL_SCALAR);
      return { dtype: "bool", shape: broadcastAll(ctx, inputs) };
    },
    evaluate([a, b], _p, out) {
      const data = new Uint8Array(numel(out.shape));
      map2(a!, b!, out.shape, data, fn);
      return data;
    },
  };
}

/** A unary op keeping dtype and shape. */
function unary(doc: string, allowed: readonly string[], fn: (d: ScalarDType) => Fn1): OpDef {
  return {
    arity: 1,
    category: "elementwise",
    view: false,
    doc,
    infer([x], _p, ctx) {
      requireDType(ctx, "operand", x!.dtype, allowed);
      return { dtype: x!.dtype, shape: x!.shape };
    },
    evaluate([x], _p, out) {
      const f = fn(out.dtype as ScalarDType);
      const src = x!.data;
      const data = allocData(out.dtype, src.length);
      for (let k = 0; k < src.length; k++) data[k] = f(src[k]!);
      return data;
    },
  };
}

// Integer arithmetic must wrap exactly, so i32/u32 products use Math.imul instead of float64 multiply.
const intMul = (d: ScalarDType): Fn2 =>
  d === "i32" ? Math.imul : d === "u32" ? (x, y) => Math.imul(x, y) >>> 0 : (x, y) => x * y;
// Integer division truncates toward zero; division by zero yields 0 (documented, never traps).
const div = (d: ScalarDType): Fn2 => (isFloat(d) ? (x, y) => x / y : (x, y) => (y === 0 ? 0 : Math.trunc(x / y)));

/** Elementwise binary ops. */
export const Add = binary("x + y (integers wrap)", ["f32", "f16", "bf16", "i32", "u32", "u8"], () => (x, y) => x + y);
/** x - y. */
export const Sub = binary("x - y (integers wrap)", ["f32", "f16", "bf16", "i32", "u32", "u8"], () => (x, y) => x - y);
/** x * y. */
export const Mul = binary("x * y (integers wrap)", ["f32", "f16", "bf16", "i32", "u32", "u8"], intMul);
/** x / y. */
export const Div = binary(
  "x / y (integers truncate toward zero; integer division by 0 gives 0)",
  ["f32", "f16", "bf16", "i32", "u32", "u8"],
  div,
);
// Math.max/min propagate NaN, matching IEEE maximum/minimum rather than maxNum.
/** max(x, y), NaN-propagating. */
export const Max = binary("max(x, y); NaN propagates", ["f32", "f16", "bf16", "i32", "u32", "u8"], () => Math.max);
/** min(x, y), NaN-propagating. */
export const Min = binary("min(x, y); NaN propagates", ["f32", "f16", "bf16", "i32", "u32", "u8"], () => Math.min);
/** x ** y on floats. */
export const Pow = binary("x ** y (floats)", ["f32", "f16", "bf16"], () => Math.pow);

/** Comparisons producing bool. */
export const Eq = compare("x == y -> bool", (x, y) => (x === y ? 1 : 0));
/** x != y. */
export const Ne = compare("x != y -> bool", (x, y) => (x !== y ? 1 : 0));
/** x < y. */
export const Lt = compare("x < y -> bool", (x, y) => (x < y ? 1 : 0));
/** x <= y. */
export const Le = compare("x <= y -> bool", (x, y) => (x <= y ? 1 : 0));
/** x > y. */
export const Gt = compare("x > y -> bool", (x, y) => (x > y ? 1 : 0));
/** x >= y. */
export const Ge = compare("x >= y -> bool", (x, y) => (x >= y ? 1 : 0));

/** Bitwise / logical ops. */
export const And = binary("bitwise and (logical on bool)", ["i32", "u32", "bool"], () => (x, y) => x & y);
/** Bitwise or. */
export const Or = binary("bitwise or (logical on bool)", ["i32", "u32", "bool"], () => (x, y) => x | y);
/** Bitwise xor. */
export const Xor = binary("bitwise xor (logical on bool)", ["i32", "u32", "bool"], () => (x, y) => x ^ y);
/** Shift left by (y mod 32). */
export const Shl = binary("x << (y mod 32)", ["i32", "u32"], () => (x, y) => x << y);
/** Shift right by (y mod 32): arithmetic on i32, logical on u32. */
export const Shr = binary("x >> (y mod 32): arithmetic on i32, logical on u32", ["i32", "u32"], (d) =>
  d === "i32" ? (x, y) => x >> y : (x, y) => x >>> y,
);

/** Unary ops. */
export const Neg = unary("-x (integers wrap)", ["f32", "f16", "bf16", "i32", "u32", "u8"], () => (x) => -x);
/** e^x. */
export const Exp = unary("e^x", ["f32", "f16", "bf16"], () => Math.exp);
/** ln x. */
export const Log = unary("ln x", ["f32", "f16", "bf16"], () => Math.log);
/** sqrt x. */
export const Sqrt = unary("sqrt x", ["f32", "f16", "bf16"], () => Math.sqrt);
/** 1/x. */
export const Recip = unary("1 / x", ["f32", "f16", "bf16"], () => (x) => 1 / x);
/** tanh x. */
export const Tanh = unary("tanh x", ["f32", "f16", "bf16"], () => Math.tanh);
/** erf x. */
export const Erf = unary(
  "erf x (float64 series / continued fraction, |err| < 1e-14)",
  ["f32", "f16", "bf16"],
  () => erf,
);
/** sin x. */
export const Sin = unary("sin x", ["f32", "f16", "bf16"], () => Math.sin);
/** cos x. */
export const Cos = unary("cos x", ["f32", "f16", "bf16"], () => Math.cos);
/** |x|. */
export const Abs = unary("|x| (i32 wraps at -2^31)", ["f32", "f16", "bf16", "i32", "u32", "u8"], () => Math.abs);
/** Logical not on bool, bitwise not on integers. */
export const Not = unary("!x on bool, ~x on i32/u32", ["bool", "i32", "u32"], (d) =>
  d === "bool" ? (x) => (x === 0 ? 1 : 0) : (x) => ~x,
);

/** Select(cond: bool, a, b) = cond ? a : b, all three broadcast. */
export const Select: OpDef = {
  arity: 3,
  category: "elementwise",
  view: false,
  doc: "cond ? a : b (cond bool; all three broadcast)",
  infer([c, a, b], _p, ctx) {
    requireDType(ctx, "condition", c!.dtype, ["bool"]);
    const d = sameDType(ctx, [a!, b!]);
    return { dtype: d, shape: broadcastAll(ctx, [c!, a!, b!]) };
  },
  evaluate([c, a, b], _p, out) {
    const n = numel(out.shape);
    const ic = broadcastIndex(out.shape, c!.shape),
      ia = broadcastIndex(out.shape, a!.shape),
      ib = broadcastIndex(out.shape, b!.shape);
    const data = allocData(out.dtype, n);
    const cd = c!.data,
      ad = a!.data,
      bd = b!.data;
    for (let k = 0; k < n; k++) {
      data[k] = cd[ic === null ? k : ic[k]!] !== 0 ? ad[ia === null ? k : ia[k]!]! : bd[ib === null ? k : ib[k]!]!;
    }
    return data;
  },
};

/** Params of Cast. */
export type CastParams = { readonly to: ScalarDType };

function castFn(to: ScalarDType): Fn1 {
  switch (to) {
    case "f32":
    case "f16":
    case "bf16":
      return (x) => x;
    // Float -> int truncates toward zero and saturates; NaN becomes 0.
    case "i32":
      return (x) => (Number.isNaN(x) ? 0 : Math.max(-2147483648, Math.min(2147483647, Math.trunc(x))));
    case "u32":
      return (x) => (Number.isNaN(x) ? 0 : Math.max(0, Math.min(4294967295, Math.trunc(x))));
    case "u8":
      return (x) => (Number.isNaN(x) ? 0 : Math.max(0, Math.min(255, Math.trunc(x))));
    case "bool":
      return (x) => (x !== 0 ? 1 : 0);
    default:
      return to satisfies never;
  }
}

/** Cast[to]: float->int truncates and saturates (NaN->0), ->bool is x != 0, ->float rounds to the target. */
export const Cast: OpDef<CastParams> = {
  arity: 1,
  category: "elementwise",
  view: false,
  doc: "convert to `to`: float->int truncates and saturates (NaN->0); ->bool is x != 0",
  infer([x], p, ctx) {
    if (!isScalarDType(p.to)) ctx.fail("bad-param", `Cast.to must be a scalar dtype, got ${JSON.stringify(p.to)}`);
    if (isPacked(x!.dtype)) ctx.fail("dtype-mismatch", "Cast cannot read packed data; use DecodePacked");
    return { dtype: p.to, shape: x!.shape };
  },
  evaluate([x], p, out) {
    const f = castFn(p.to);
    const src = x!.data;
    const data = allocData(out.dtype, src.length);
    for (let k = 0; k < src.length; k++) data[k] = f(src[k]!);
    return data;
  },
};

// Type checking of kernel IR expressions: each node's declared `type` must equal the type its rule gives.
// Used by validate.ts; reports issues through a callback instead of throwing so all problems are listed.

import type { KernelValidationCode } from "./errors.js";
import { elemOf, isVecType, lanesOf, load4Types, widenedType } from "./ir-types.js";
import type { ElemType, Expr, ValueType } from "./ir.js";

/** What a name denotes in the validator's scope. */
export type Binding =
  | { readonly kind: "local"; readonly type: ValueType; readonly mutable: boolean }
  | { readonly kind: "param"; readonly type: ValueType }
  | { readonly kind: "spec" }
  | {
      readonly kind: "array";
      readonly space: "global" | "workgroup" | "private";
      readonly elem: ElemType;
      readonly atomic: boolean;
      readonly readable: boolean;
      readonly writable: boolean;
    };

/** Scope plus an issue sink. */
export interface ExprContext {
  readonly lookup: (name: string) => Binding | undefined;
  readonly report: (code: KernelValidationCode, path: string, message: string) => void;
}

const VALUE_TYPES = new Set<string>([
  "bool",
  "i32",
  "u32",
  "f32",
  "vec2<f32>",
  "vec4<f32>",
  "vec2<i32>",
  "vec4<i32>",
  "vec2<u32>",
  "vec4<u32>",
  ...["f32", "i32", "u32"].flatMap((e) => [`vec8<${e}>`, `vec16<${e}>`]),
]);
const FLOAT_ONLY = new Set(["exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sin", "cos", "floor", "fma"]);

/** True if `t` is a ValueType string. */
export function isValueType(t: unknown): t is ValueType {
  return typeof t === "string" && VALUE_TYPES.has(t);
}

/** Checks that a literal's value fits its type. */
export function literalProblem(type: string, value: unknown): string | undefined {
  if (type === "bool") return typeof value === "boolean" ? undefined : "bool literal must be true/false";
  if (typeof value !== "number") return `${type} literal must be a number`;
  if (type === "f32")
    return Number.isNaN(value) || Math.fround(value) === value
      ? undefined
      : `${value} is not exactly representable in f32`;
  if (!Number.isInteger(value)) return `${type} literal ${value} is not an integer`;
  if (type === "i32" && (value < -2147483648 || value > 2147483647)) return `${value} out of i32 range`;
  if (type === "u32" && (value < 0 || value > 4294967295)) return `${value} out of u32 range`;
  return undefined;
}

/** Checks `e` at `path`; returns its type (the declared one, so checking continues after an issue). */
export function checkExpr(e: Expr, path: string, cx: ExprContext): ValueType {
  const mismatch = (what: string, want: string, got: string): void =>
    cx.report("type_mismatch", path, `${e.k}: ${what} must be ${want}, got ${got}`);
  const sub = (x: Expr, key: string): ValueType => checkExpr(x, `${path}.${key}`, cx);
  if (!isValueType(e.type)) {
    cx.report("type_mismatch", path, `unknown type ${String(e.type)}`);
    return "u32";
  }
  switch (e.k) {
    case "const": {
      if (isVecType(e.type)) mismatch("type", "a scalar", e.type);
      const p = literalProblem(e.type, e.value);
      if (p !== undefined) cx.report("bad_literal", path, p);
      return e.type;
    }
    case "local":
    case "param": {
      const b = cx.lookup(e.name);
      if (b === undefined || (b.kind !== "local" && b.kind !== "param"))
        cx.report("unknown_name", path, `no ${e.k} named ${e.name} in scope`);
      else if (b.kind !== e.k) cx.report("unknown_name", path, `${e.name} is a ${b.kind}, not a ${e.k}`);
      else if (b.type !== e.type) mismatch(`type of ${e.name}`, b.type, e.type);
      return e.type;
    }
    case "spec": {
      const b = cx.lookup(e.name);
      if (b?.kind !== "spec") cx.report("unknown_name", path, `no spec constant named ${e.name}`);
      if (e.type !== "u32") mismatch("type", "u32", String((e as Expr).type));
      return e.type;
    }
    case "builtin": {
      if (e.type !== "u32") mismatch("type", "u32", String((e as Expr).type));
      const axisNames = ["global_id", "local_id", "workgroup_id", "num_workgroups", "workgroup_size"];
      const scalarNames = ["local_index", "subgroup_id", "subgroup_lane", "subgroup_size"];
      if (axisNames.includes(e.name)) {
        const axis = (e as { axis?: unknown }).axis;
        if (axis !== 0 && axis !== 1 && axis !== 2)
          cx.report("bad_literal", path, `builtin ${e.name} needs axis 0, 1 or 2`);
      } else if (!scalarNames.includes(e.name)) cx.report("unknown_name", path, `unknown builtin ${String(e.name)}`);
      return e.type;
    }
    case "load": {
      const it = sub(e.index, "index");
      if (it !== "u32") mismatch("index", "u32", it);
      const b = cx.lookup(e.array);
      if (b?.kind !== "array" || b.space !== e.space) {
        cx.report("unknown_name", path, `no ${e.space} array named ${e.array}`);
        return e.type;
      }
      if (b.atomic) cx.report("atomic_misuse", path, `${e.array} is atomic; read it with an atomic load`);
      if (!b.readable) cx.report("access_violation", path, `${e.array} is write-only`);
      if (widenedType(b.elem) !== e.type) mismatch("type", widenedType(b.elem), e.type);
      return e.type;
    }
    case "load4": {
      const it = sub(e.index, "index");
      if (it !== "u32") mismatch("index", "u32", it);
      const b = cx.lookup(e.array);
      if (b?.kind !== "array" || b.space !== "global") {
        cx.report("unknown_name", path, `no global buffer named ${e.array}`);
        return e.type;
      }
      if (b.atomic) cx.report("atomic_misuse", path, `${e.array} is atomic; read it with an atomic load`);
      if (!b.readable) cx.report("access_violation", path, `${e.array} is write-only`);
      const lanes = lanesOf(e.type);
      const types = load4Types(b.elem, lanes === 8 || lanes === 16 ? lanes : 4);
      if (e.packed === true) {
        if ((b.elem !== "u8" && b.elem !== "i8") || !PACKED_TYPES.includes(e.type))
          cx.report(
            "bad_vector",
            path,
            `a packed load4 reads u8/i8 storage as vec4/vec8/vec16<u32>, not ${b.elem} as ${e.type}`,
          );
      } else if (types.length === 0)
        cx.report("bad_vector", path, `load4 needs a buffer of scalar elements, ${e.array} holds ${b.elem}`);
      else if (!types.includes(e.type as never)) mismatch("type", types.join(" or "), e.type);
      return e.type;
    }
    case "unary": {
      const at = sub(e.a, "a");
      if (at !== e.type) mismatch("operand", e.type, at);
      const el = elemOf(e.type);
      if (e.op === "neg" && (el === "bool" || el === "u32")) cx.report("bad_operand_type", path, `neg on ${e.type}`);
      if (e.op === "not" && el === "f32") cx.report("bad_operand_type", path, `not on ${e.type}`);
      return e.type;
    }
    case "binary": {
      const at = sub(e.a, "a");
      const bt = sub(e.b, "b");
      if (at !== e.type) mismatch("a", e.type, at);
      if (bt !== e.type) mismatch("b", e.type, bt);
      const el = elemOf(e.type);
      const arith = ["add", "sub", "mul", "div", "rem"].includes(e.op);
      const bits = ["and", "or", "xor"].includes(e.op);
      if (el === "bool" ? !bits : el === "f32" ? !arith : false)
        cx.report("bad_operand_type", path, `${e.op} on ${e.type}`);
      return e.type;
    }
    case "cmp": {
      const at = sub(e.a, "a");
      const bt = sub(e.b, "b");
      if (at !== bt) mismatch("b", at, bt);
      if (isVecType(at)) cx.report("bad_operand_type", path, `comparison on vector ${at}`);
      if (at === "bool" && e.op !== "eq" && e.op !== "ne") cx.report("bad_operand_type", path, `${e.op} on bool`);
      if (e.type !== "bool") mismatch("type", "bool", String((e as Expr).type));
      return "bool";
    }
    case "select": {
      const ct = sub(e.cond, "cond");
      if (ct !== "bool") mismatch("cond", "bool", ct);
      const at = sub(e.a, "a");
      const bt = sub(e.b, "b");
      if (at !== e.type) mismatch("a", e.type, at);
      if (bt !== e.type) mismatch("b", e.type, bt);
      return e.type;
    }
    case "call": {
      if (e.fn === "dot4U8I8") return dot4Type(e, path, cx, sub, mismatch);
      const arity = e.fn === "fma" ? 3 : e.fn === "min" || e.fn === "max" ? 2 : 1;
      if (!Array.isArray(e.args) || e.args.length !== arity) {
        cx.report("type_mismatch", path, `${e.fn} takes ${arity} argument(s)`);
        return e.type;
      }
      e.args.forEach((a, i) => {
        const t = sub(a, `args[${i}]`);
        if (t !== e.type) mismatch(`args[${i}]`, e.type, t);
      });
      const el = elemOf(e.type);
      if (el === "bool" || (el !== "f32" && FLOAT_ONLY.has(e.fn)))
        cx.report("bad_operand_type", path, `${e.fn} on ${e.type}`);
      return e.type;
    }
    case "cast":
    case "bitcast": {
      const at = sub(e.a, "a");
      if (lanesOf(at) !== lanesOf(e.type))
        cx.report("bad_vector", path, `${e.k} ${at} -> ${e.type} changes the lane count`);
      if (e.k === "bitcast" && (elemOf(at) === "bool" || elemOf(e.type) === "bool"))
        cx.report("bad_operand_type", path, "bitcast of bool");
      return e.type;
    }
    case "pack": {
      const at = sub(e.a, "a");
      const want = e.fmt === "bf16x2" || e.fmt === "f16x2" ? "vec2<f32>" : "f32";
      if (at !== want) mismatch("operand", want, at);
      if (e.type !== "u32") mismatch("type", "u32", String((e as Expr).type));
      return "u32";
    }
    case "unpack": {
      const at = sub(e.a, "a");
      if (at !== "u32") mismatch("operand", "u32", at);
      const want = e.fmt === "bf16x2" || e.fmt === "f16x2" ? "vec2<f32>" : "f32";
      if (e.type !== want) mismatch("type", want, e.type);
      return e.type;
    }
    case "vec": {
      if (!isVecType(e.type)) {
        mismatch("type", "a vector", e.type);
        return e.type;
      }
      if (e.elems.length !== lanesOf(e.type))
        cx.report("bad_vector", path, `${e.type} needs ${lanesOf(e.type)} components, got ${e.elems.length}`);
      e.elems.forEach((x, i) => {
        const t = sub(x, `elems[${i}]`);
        if (t !== elemOf(e.type)) mismatch(`elems[${i}]`, elemOf(e.type), t);
      });
      return e.type;
    }
    case "extract": {
      const at = sub(e.a, "a");
      if (!isVecType(at)) cx.report("bad_vector", path, `extract from scalar ${at}`);
      else {
        if (!Number.isInteger(e.lane) || e.lane < 0 || e.lane >= lanesOf(at))
          cx.report("bad_vector", path, `lane ${e.lane} out of range for ${at}`);
        if (elemOf(at) !== e.type) mismatch("type", elemOf(at), e.type);
      }
      return e.type;
    }
    default:
      e satisfies never;
      cx.report("type_mismatch", path, `unknown expression kind ${String((e as { k: unknown }).k)}`);
      return "u32";
  }
}

/** The types of a packed `load4` (decision 2320; vec8/vec16: decision 2330). */
const PACKED_TYPES: readonly ValueType[] = ["vec4<u32>", "vec8<u32>", "vec16<u32>"];
/** The accumulator types of `dot4U8I8` (decision 2320; vec8/vec16: decision 2330). */
const DOT4_TYPES: readonly ValueType[] = ["i32", "vec4<i32>", "vec8<i32>", "vec16<i32>"];

/**
 * `dot4U8I8(acc, a, b)`: acc and the result i32 (or vec4/vec8/vec16<i32>), a and b u32 (or vec4/vec8/vec16<u32>)
 * with the same lanes.
 */
function dot4Type(
  e: Extract<Expr, { k: "call" }>,
  path: string,
  cx: ExprContext,
  sub: (x: Expr, key: string) => ValueType,
  mismatch: (what: string, want: string, got: string) => void,
): ValueType {
  if (!Array.isArray(e.args) || e.args.length !== 3) {
    cx.report("type_mismatch", path, "dot4U8I8 takes 3 argument(s)");
    return e.type;
  }
  if (!DOT4_TYPES.includes(e.type)) cx.report("bad_operand_type", path, `dot4U8I8 on ${e.type}`);
  const packed = e.type.replace("i32", "u32");
  e.args.forEach((a, i) => {
    const t = sub(a, `args[${i}]`);
    const want = i === 0 ? e.type : packed;
    if (t !== want) mismatch(`args[${i}]`, want, t);
  });
  return e.type;
}

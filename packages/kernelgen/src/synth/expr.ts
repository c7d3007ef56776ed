// Expression DAGs for fused elementwise math (regions, reduction epilogues, GEMV/GEMM epilogues) and their
// lowering to kernel IR in the DSL, with the primitive graph's semantics (integer /0 = 0, NaN-propagating max).

import type { Builder, Val } from "@poot/kernel-dsl";
import type { ScalarDType } from "@poot/graph-ir";
import { KernelgenError } from "../errors.js";
import { valueTypeOf } from "./storage.js";

/** Value types of expression nodes (storage types widen to these on load). */
export type ExprType = "f32" | "i32" | "u32" | "bool";

/** Expression type of a graph scalar dtype (16-bit floats compute in f32, u8 in u32): what a load of it produces. */
export function exprTypeOf(d: ScalarDType): ExprType {
  return valueTypeOf(d);
}
/** Unary functions. `recip` = 1/x, `not` = bitwise (logical on bool). */
export type UnaryFn =
  | "neg"
  | "exp"
  | "log"
  | "sqrt"
  | "rsqrt"
  | "recip"
  | "tanh"
  | "erf"
  | "sin"
  | "cos"
  | "abs"
  | "floor"
  | "not";
/** Binary functions (operands of one type). */
export type BinaryFn =
  | "add"
  | "sub"
  | "mul"
  | "div"
  | "rem"
  | "max"
  | "min"
  | "pow"
  | "and"
  | "or"
  | "xor"
  | "shl"
  | "shr";
/** Comparisons (-> bool). */
export type CmpFn = "eq" | "ne" | "lt" | "le" | "gt" | "ge";

/**
 * A node of an expression DAG; operands are indices of earlier nodes. `leaf` names a value the synthesizer
 * supplies (an input element, the accumulator, a row reduction result). `round` rounds an f32 to bf16/f16
 * precision and back (where the primitive graph stores an intermediate in a 16-bit type).
 */
export type ExprNode =
  | { readonly op: "leaf"; readonly name: string }
  | { readonly op: "const"; readonly value: number | boolean; readonly type: ExprType }
  | { readonly op: "unary"; readonly fn: UnaryFn; readonly a: number }
  | { readonly op: "binary"; readonly fn: BinaryFn; readonly a: number; readonly b: number }
  | { readonly op: "cmp"; readonly fn: CmpFn; readonly a: number; readonly b: number }
  | { readonly op: "select"; readonly cond: number; readonly a: number; readonly b: number }
  | { readonly op: "cast"; readonly to: ExprType; readonly a: number }
  | { readonly op: "round"; readonly to: "bf16" | "f16"; readonly a: number };

/** Infers the type of every node; throws `bad_dtype` / `bad_param` on an ill-typed DAG. */
export function typeNodes(
  synth: string,
  nodes: readonly ExprNode[],
  leafType: (name: string) => ExprType | undefined,
): ExprType[] {
  const types: ExprType[] = [];
  const bad = (i: number, msg: string): never => {
    throw new KernelgenError("bad_dtype", `node ${i}: ${msg}`, { synth, param: `expr[${i}]`, value: nodes[i] });
  };
  const ref = (i: number, j: number): ExprType => {
    if (!Number.isInteger(j) || j < 0 || j >= i)
      throw new KernelgenError("bad_param", `node ${i} refers to node ${j}, which is not an earlier node`, {
        synth,
        param: `expr[${i}]`,
      });
    return types[j] as ExprType;
  };
  nodes.forEach((n, i) => {
    switch (n.op) {
      case "leaf": {
        const t = leafType(n.name);
        if (t === undefined)
          throw new KernelgenError("bad_param", `unknown leaf ${n.name}`, {
            synth,
            param: `expr[${i}]`,
            value: n.name,
          });
        types.push(t);
        return;
      }
      case "const":
        types.push(n.type);
        return;
      case "unary": {
        const t = ref(i, n.a);
        if (n.fn === "not" ? t === "f32" : n.fn === "neg" || n.fn === "abs" ? t === "bool" : t !== "f32")
          bad(i, `${n.fn} on ${t}`);
        types.push(t);
        return;
      }
      case "binary": {
        const a = ref(i, n.a),
          b = ref(i, n.b);
        if (a !== b) bad(i, `${n.fn} of ${a} and ${b}`);
        const bits = n.fn === "and" || n.fn === "or" || n.fn === "xor";
        if (bits ? a === "f32" : n.fn === "shl" || n.fn === "shr" ? a === "f32" || a === "bool" : a === "bool")
          bad(i, `${n.fn} on ${a}`);
        if (n.fn === "pow" && a !== "f32") bad(i, `pow on ${a}`);
        types.push(a);
        return;
      }
      case "cmp": {
        const a = ref(i, n.a),
          b = ref(i, n.b);
        if (a !== b) bad(i, `${n.fn} of ${a} and ${b}`);
        types.push("bool");
        return;
      }
      case "select": {
        if (ref(i, n.cond) !== "bool") bad(i, "select condition must be bool");
        const a = ref(i, n.a),
          b = ref(i, n.b);
        if (a !== b) bad(i, `select of ${a} and ${b}`);
        types.push(a);
        return;
      }
      case "cast":
        ref(i, n.a);
        types.push(n.to);
        return;
      case "round":
        if (ref(i, n.a) !== "f32") bad(i, "round needs an f32 operand");
        types.push("f32");
        return;
      default:
        n satisfies never;
    }
  });
  return types;
}

type AnyVal = Val<ExprType>;

/** f32 power with the primitive graph's (Math.pow) special cases: sign for odd integer exponents, NaN otherwise. */
function pow(k: Builder, a: Val<"f32">, b: Val<"f32">): Val<"f32"> {
  const { exp, log, abs, floor, select, let_, f32 } = k;
  const mag = let_(exp(b.mul(log(abs(a)))), "pw");
  const isInt = b.eq(floor(b));
  const odd = isInt.and(b.sub(floor(b.mul(0.5)).mul(2)).eq(1));
  const neg = let_(select(isInt, select(odd, mag.neg(), mag), f32(NaN)), "pwn");
  return select(b.eq(0), f32(1), select(a.lt(0), neg, mag));
}

/** Operand indices of a node. */
export function operandsOf(n: ExprNode): number[] {
  switch (n.op) {
    case "leaf":
    case "const":
      return [];
    case "unary":
    case "cast":
    case "round":
      return [n.a];
    case "binary":
    case "cmp":
      return [n.a, n.b];
    case "select":
      return [n.cond, n.a, n.b];
    default:
      return n satisfies never;
  }
}

/** Nodes reachable from `roots` (a mask over node indices). */
export function reachable(nodes: readonly ExprNode[], roots: readonly number[]): boolean[] {
  const mark = new Array<boolean>(nodes.length).fill(false);
  const stack = [...roots];
  while (stack.length > 0) {
    const i = stack.pop() as number;
    if (mark[i]) continue;
    mark[i] = true;
    stack.push(...operandsOf(nodes[i] as ExprNode));
  }
  return mark;
}

/** Leaf names reachable from `roots`. */
export function leavesOf(nodes: readonly ExprNode[], roots: readonly number[]): Set<string> {
  const mark = reachable(nodes, roots);
  const out = new Set<string>();
  nodes.forEach((n, i) => {
    if (mark[i] && n.op === "leaf") out.add(n.name);
  });
  return out;
}

/**
 * Emits the DAG into the current kernel body: each node becomes one `let` (computed once, CSE by construction).
 * `leaf(name)` supplies leaf values. With `roots`, only the nodes they reach are emitted. Returns node values
 * by index (undefined for nodes not emitted).
 */
export function emitNodes(
  k: Builder,
  nodes: readonly ExprNode[],
  types: readonly ExprType[],
  leaf: (name: string) => AnyVal,
  roots?: readonly number[],
): AnyVal[] {
  const live = roots === undefined ? undefined : reachable(nodes, roots);
  const {
    let_,
    f32,
    u32,
    i32,
    bool,
    select,
    exp,
    log,
    sqrt,
    rsqrt,
    tanh,
    erf,
    sin,
    cos,
    abs,
    floor,
    min,
    max,
    pack,
    unpack,
  } = k;
  const vals: AnyVal[] = [];
  const v = (j: number): AnyVal => vals[j] as AnyVal;
  nodes.forEach((n, i) => {
    if (live !== undefined && !live[i]) {
      vals.push(undefined as unknown as AnyVal);
      return;
    }
    const t = types[i] as ExprType;
    let e: AnyVal;
    switch (n.op) {
      case "leaf":
        e = leaf(n.name);
        break;
      case "const":
        e =
          t === "bool"
            ? bool(n.value === true || n.value === 1)
            : t === "f32"
              ? f32(Number(n.value))
              : t === "i32"
                ? i32(Number(n.value))
                : u32(Number(n.value));
        break;
      case "unary": {
        const a = v(n.a) as Val<"f32">;
        const fn = n.fn;
        switch (fn) {
          case "neg":
            e = a.neg();
            break;
          case "not":
            e = a.not();
            break;
          case "exp":
            e = exp(a);
            break;
          case "log":
            e = log(a);
            break;
          case "sqrt":
            e = sqrt(a);
            break;
          case "rsqrt":
            e = rsqrt(a);
            break;
          case "recip":
            e = f32(1).div(a);
            break;
          case "tanh":
            e = tanh(a);
            break;
          case "erf":
            e = erf(a);
            break;
          case "sin":
            e = sin(a);
            break;
          case "cos":
            e = cos(a);
            break;
          case "abs":
            e = abs(a);
            break;
          case "floor":
            e = floor(a);
            break;
          default:
            fn satisfies never;
            throw new Error("unreachable");
        }
        break;
      }
      case "binary": {
        const a = v(n.a) as Val<"f32">,
          b = v(n.b) as Val<"f32">;
        const fn = n.fn;
        switch (fn) {
          case "add":
            e = a.add(b);
            break;
          case "sub":
            e = a.sub(b);
            break;
          case "mul":
            e = a.mul(b);
            break;
          case "div":
          case "rem": {
            // Integer division by zero gives 0 in the primitive graph; targets leave it undefined, so guard.
            if (t === "f32") e = fn === "div" ? a.div(b) : a.rem(b);
            else {
              const ai = a as unknown as Val<"u32">,
                bi = b as unknown as Val<"u32">;
              const safe = select(bi.eq(0), t === "i32" ? (i32(1) as unknown as Val<"u32">) : u32(1), bi);
              const q = fn === "div" ? ai.div(safe) : ai.rem(safe);
              e = select(bi.eq(0), t === "i32" ? (i32(0) as unknown as Val<"u32">) : u32(0), q);
            }
            break;
          }
          case "max":
          case "min": {
            const m = fn === "max" ? max(a, b) : min(a, b);
            // NaN propagates (the graph's Max/Min); hardware fmax/fmin would return the other operand.
            e = t === "f32" ? select(a.ne(a).or(b.ne(b)), a.add(b), m) : m;
            break;
          }
          case "pow":
            e = pow(k, a, b);
            break;
          case "and":
            e = a.and(b);
            break;
          case "or":
            e = a.or(b);
            break;
          case "xor":
            e = a.xor(b);
            break;
          case "shl":
            e = a.shl(b);
            break;
          case "shr":
            e = a.shr(b);
            break;
          default:
            fn satisfies never;
            throw new Error("unreachable");
        }
        break;
      }
      case "cmp": {
        const a = v(n.a) as Val<"f32">,
          b = v(n.b) as Val<"f32">;
        e = a[n.fn](b);
        break;
      }
      case "select":
        e = select(v(n.cond) as Val<"bool">, v(n.a) as Val<"f32">, v(n.b) as Val<"f32">);
        break;
      case "cast": {
        const a = v(n.a);
        e = a.type === n.to ? a : a.cast(n.to);
        break;
      }
      case "round":
        e = unpack(n.to, pack(n.to, v(n.a) as Val<"f32">));
        break;
      default:
        n satisfies never;
        throw new Error("unreachable");
    }
    vals.push(n.op === "leaf" || n.op === "const" ? e : let_(e, `x${i}`));
  });
  return vals;
}

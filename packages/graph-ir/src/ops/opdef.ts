// The op-definition interface: a typing rule and reference semantics side by side.
// Primitive ops and the compiler's composite ops (Fused, Rope, Attention, ...) both implement it.

import type { DType } from "../dtype.js";
import { dtypeName, isPacked } from "../dtype.js";
import { GraphError, type GraphErrorCode } from "../errors.js";
import type { Params, ValueType } from "../graph.js";
import { shapeString } from "../shape.js";
import type { Tensor, TensorData } from "../tensor.js";

/** Context passed to typing rules and reference semantics; `fail` throws a GraphError naming the equation. */
export interface OpContext {
  /** Op name. */
  readonly op: string;
  /** Equation index, when the op is typed as part of a graph. */
  readonly eqn?: number;
  /** Input and output value ids (literal inputs omitted). */
  readonly values: readonly number[];
  /** Throws a typed error with this context. */
  fail(code: GraphErrorCode, message: string): never;
}

/** Which analysis category an op belongs to. */
export type OpCategory = "elementwise" | "reduce" | "movement" | "linalg" | "source" | "packed" | "composite";

/**
 * An op definition. `infer` is the typing rule (it throws through `ctx.fail` on bad input);
 * `evaluate` is the reference semantics: it returns float64 values for float outputs (the evaluator
 * then rounds them to the output's storage dtype), typed integer arrays otherwise, bytes for packed.
 */
export interface OpDef<P extends Params = Params> {
  /** Number of inputs, or a minimum for variadic ops. */
  readonly arity: number | { readonly min: number };
  /** Category, used by analysis and printing. */
  readonly category: OpCategory;
  /** True when an unfused executor can alias or view the input instead of launching (dispatchCount 0). */
  readonly view: boolean;
  /** One-line description of the semantics. */
  readonly doc: string;
  /** Typing rule: the output type from input types and params. */
  infer(inputs: readonly ValueType[], params: P, ctx: OpContext): ValueType;
  /** Reference semantics. */
  evaluate(inputs: readonly Tensor[], params: P, out: ValueType, ctx: OpContext): TensorData;
}

/** A table of op definitions keyed by op name; pass an extended table to validate/eval/Builder. */
export type OpTable = { readonly [name: string]: OpDef<any> };

/** Builds an OpContext. */
export function opContext(op: string, values: readonly number[], eqn?: number): OpContext {
  const base = eqn === undefined ? { op, values } : { op, values, eqn };
  return {
    ...base,
    fail(code, message) {
      throw new GraphError(code, message, base);
    },
  };
}

/** Printable type `f32[2,3]`. */
export function typeString(t: ValueType): string {
  return `${dtypeName(t.dtype)}${shapeString(t.shape)}`;
}

/** Fails unless `d` is one of `allowed` (by scalar name). */
export function requireDType(ctx: OpContext, what: string, d: DType, allowed: readonly string[]): void {
  if (isPacked(d) || !allowed.includes(d))
    ctx.fail("dtype-mismatch", `${what} has dtype ${dtypeName(d)}; expected one of ${allowed.join(", ")}`);
}

/** Normalizes a possibly negative axis against `rank`, failing with bad-axis. */
export function normAxis(ctx: OpContext, axis: unknown, rank: number): number {
  if (typeof axis !== "number" || !Number.isInteger(axis) || axis < -rank || axis >= rank) {
    ctx.fail("bad-axis", `axis ${String(axis)} is out of range for rank ${rank}`);
  }
  return axis < 0 ? axis + rank : axis;
}

/** Reads an integer-array param, failing with bad-param. */
export function intList(ctx: OpContext, name: string, v: unknown): number[] {
  if (!Array.isArray(v) || !v.every((x) => Number.isInteger(x)))
    ctx.fail("bad-param", `param ${name} must be an integer array`);
  return v as number[];
}

/** Element dtypes by family, for typing rules. */
export const FLOATS = ["f32", "f16", "bf16"] as const;
/** Numeric (non-bool) scalar dtypes. */
export const NUMERIC = ["f32", "f16", "bf16", "i32", "u32", "u8"] as const;
/** Integer dtypes that support bit shifts. */
export const SHIFTABLE = ["i32", "u32"] as const;
/** Dtypes that support and/or/xor. */
export const BITWISE = ["i32", "u32", "bool"] as const;
/** Every scalar dtype. */
export const ALL_SCALAR = ["f32", "f16", "bf16", "i32", "u32", "u8", "bool"] as const;

// Test helpers: evaluate a single op on literal data and check typed errors.
// Shared by unit tests (src/**) and public-API tests (test/**).

import { expect } from "vitest";
import {
  Builder,
  GraphError,
  PRIMITIVE_OPS,
  evaluate,
  opContext,
  type DType,
  type GraphErrorCode,
  type Literal,
  type Params,
  type Shape,
  type Tensor,
  type ValueType,
} from "@poot/graph-ir";

/** An input tensor given as plain numbers. */
export interface T {
  dtype: DType;
  shape: Shape;
  data: ArrayLike<number>;
}

/** Builds a one-equation graph over Const inputs and evaluates it. */
export function evalOp(op: string, inputs: readonly (T | Literal)[], params: Params = {}): Tensor {
  const b = new Builder();
  const consts: Record<string, ArrayLike<number>> = {};
  const refs = inputs.map((t, k) => {
    if ("lit" in t) return t;
    consts[`in${k}`] = t.data;
    return b.const(`in${k}`, t.dtype, t.shape);
  });
  b.output("out", b.emit(op, refs, params));
  return evaluate(b.build(), { consts }).outputs.out!;
}

/** Runs an op's typing rule alone. */
export function typeOp(op: string, inputs: readonly ValueType[], params: Params = {}): ValueType {
  return PRIMITIVE_OPS[op as keyof typeof PRIMITIVE_OPS].infer(inputs, params as never, opContext(op, []));
}

/** Asserts that `fn` throws a GraphError with `code`; returns it. */
export function expectCode(fn: () => unknown, code: GraphErrorCode): GraphError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(GraphError);
    expect((e as GraphError).code).toBe(code);
    return e as GraphError;
  }
  throw new Error(`expected a GraphError ${code}, but nothing was thrown`);
}

/** Row-major flat index of `idx` in `shape`. */
export function flat(shape: Shape, idx: readonly number[]): number {
  let k = 0;
  for (let d = 0; d < shape.length; d++) k = k * shape[d]! + idx[d]!;
  return k;
}

/** All multi-indices of `shape` in row-major order. */
export function indices(shape: Shape): number[][] {
  const out: number[][] = [[]];
  for (const d of shape) {
    const next: number[][] = [];
    for (const p of out) for (let i = 0; i < d; i++) next.push([...p, i]);
    out.splice(0, out.length, ...next);
  }
  return out;
}

/** Deterministic pseudo-random values in [-1, 1) (a small LCG), so tests are reproducible. */
export function rand(n: number, seed = 1): number[] {
  let s = seed >>> 0;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return Math.fround(s / 2 ** 31 - 1);
  });
}

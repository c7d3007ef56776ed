// Small helpers shared by composite op definitions: param readers, broadcasting and widening.
// Kept here so each op module holds only its typing rule and reference semantics.

import {
  broadcastShapes,
  isFloat,
  isPacked,
  numel,
  stridesOf,
  type DType,
  type OpContext,
  type Shape,
} from "@poot/graph-ir";

/** Flat source index of every output element when `inShape` is numpy-broadcast to `outShape` (null: identity). */
export function broadcastMap(outShape: Shape, inShape: Shape): Int32Array | null {
  const n = numel(outShape);
  if (inShape.length === outShape.length && inShape.every((d, i) => d === outShape[i])) return null;
  const r = outShape.length;
  const pad = [...new Array<number>(r - inShape.length).fill(1), ...inShape];
  const inStr = stridesOf(pad).map((s, i) => (pad[i] === 1 ? 0 : s));
  const outStr = stridesOf(outShape);
  const map = new Int32Array(n);
  for (let k = 0; k < n; k++) {
    let rem = k,
      src = 0;
    for (let d = 0; d < r; d++) {
      const idx = Math.floor(rem / outStr[d]!);
      rem -= idx * outStr[d]!;
      src += idx * inStr[d]!;
    }
    map[k] = src;
  }
  return map;
}

/** Broadcast of two shapes or a shape-mismatch failure. */
export function mustBroadcast(ctx: OpContext, a: Shape, b: Shape, what: string): number[] {
  const s = broadcastShapes(a, b);
  if (s === null) return ctx.fail("shape-mismatch", `${what}: [${a.join(",")}] and [${b.join(",")}] do not broadcast`);
  return s;
}

/** Fails unless `d` is a float dtype (f32/f16/bf16). */
export function requireFloat(ctx: OpContext, what: string, d: DType): void {
  if (isPacked(d) || !isFloat(d)) ctx.fail("dtype-mismatch", `${what} must be f32, f16 or bf16`);
}

/** Reads a number param. */
export function numParam(ctx: OpContext, p: unknown, name: string): number {
  if (typeof p !== "number" || !Number.isFinite(p))
    return ctx.fail("bad-param", `param ${name} must be a finite number`);
  return p;
}

/** Reads a positive integer param. */
export function intParam(ctx: OpContext, p: unknown, name: string, min = 1): number {
  if (typeof p !== "number" || !Number.isInteger(p) || p < min)
    return ctx.fail("bad-param", `param ${name} must be an integer >= ${min}`);
  return p;
}

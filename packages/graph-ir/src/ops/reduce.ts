// Reduce: Sum, Max, Min, ArgMax (-> i32) over given axes, with keepdim.
// Sums accumulate in float64 in row-major order; ArgMax returns the first maximal index.

import { isPacked } from "../dtype.js";
import type { ValueType } from "../graph.js";
import { numel, stridesOf } from "../shape.js";
import { allocData, type TensorData } from "../tensor.js";
import { intList, normAxis, requireDType, type OpDef } from "./opdef.js";

/** Reduction kinds. */
export type ReduceKind = "sum" | "max" | "min" | "argmax";

/** Params of Reduce. */
export type ReduceParams = { readonly kind: ReduceKind; readonly axes: readonly number[]; readonly keepdim: boolean };

const KINDS: readonly string[] = ["sum", "max", "min", "argmax"];

/** Reduce[kind, axes, keepdim]: empty sum is 0, empty max/min are -Inf/+Inf (floats); argmax needs one axis. */
export const Reduce: OpDef<ReduceParams> = {
  arity: 1,
  category: "reduce",
  view: false,
  doc: "reduce `axes` with sum | max | min | argmax (-> i32, first maximal index); keepdim keeps size-1 dims",
  infer([x], p, ctx) {
    if (!KINDS.includes(p.kind)) ctx.fail("bad-param", `Reduce.kind must be one of ${KINDS.join(", ")}`);
    if (typeof p.keepdim !== "boolean") ctx.fail("bad-param", "Reduce.keepdim must be a boolean");
    if (isPacked(x!.dtype)) ctx.fail("dtype-mismatch", "cannot reduce packed data");
    requireDType(ctx, "operand", x!.dtype, ["f32", "f16", "bf16", "i32", "u32", "u8"]);
    const rank = x!.shape.length;
    const axes = intList(ctx, "axes", p.axes).map((a) => normAxis(ctx, a, rank));
    if (new Set(axes).size !== axes.length) ctx.fail("bad-axis", `duplicate axes ${JSON.stringify(p.axes)}`);
    if (p.kind === "argmax" && axes.length !== 1) ctx.fail("bad-axis", "argmax reduces exactly one axis");
    const shape: number[] = [];
    x!.shape.forEach((d, i) => {
      if (!axes.includes(i)) shape.push(d);
      else if (p.keepdim) shape.push(1);
    });
    return { dtype: p.kind === "argmax" ? "i32" : x!.dtype, shape };
  },
  evaluate([x], p, out: ValueType) {
    const shape = x!.shape;
    const rank = shape.length;
    const axes = p.axes.map((a) => (a < 0 ? a + rank : a));
    // Move reduced axes last: iterate kept index (outer) x reduced index (inner) through strides.
    const str = stridesOf(shape);
    const keptDims = shape.map((_, i) => i).filter((i) => !axes.includes(i));
    const redDims = axes.slice().sort((a, b) => a - b);
    const nOut = numel(out.shape);
    const nRed = numel(redDims.map((i) => shape[i]!));
    const redOff = offsets(
      redDims.map((i) => shape[i]!),
      redDims.map((i) => str[i]!),
    );
    const keptOff = offsets(
      keptDims.map((i) => shape[i]!),
      keptDims.map((i) => str[i]!),
    );
    const src = x!.data;
    const data: TensorData = allocData(out.dtype, nOut);
    for (let o = 0; o < nOut; o++) {
      const base = keptOff[o]!;
      switch (p.kind) {
        case "sum": {
          let s = 0;
          for (let r = 0; r < nRed; r++) s += src[base + redOff[r]!]!;
          data[o] = s;
          break;
        }
        case "max": {
          let m = -Infinity;
          for (let r = 0; r < nRed; r++) m = Math.max(m, src[base + redOff[r]!]!);
          data[o] = m;
          break;
        }
        case "min": {
          let m = Infinity;
          for (let r = 0; r < nRed; r++) m = Math.min(m, src[base + redOff[r]!]!);
          data[o] = m;
          break;
        }
        case "argmax": {
          let m = -Infinity,
            best = 0;
          for (let r = 0; r < nRed; r++) {
            const v = src[base + redOff[r]!]!;
            // NaN counts as the maximum (first NaN wins), like numpy.argmax.
            if (v > m || (Number.isNaN(v) && !Number.isNaN(m))) {
              m = v;
              best = r;
            }
          }
          data[o] = best;
          break;
        }
        default:
          p.kind satisfies never;
      }
    }
    return data;
  },
};

/** Flat offsets of every index of `dims` with the given source strides, in row-major order. */
export function offsets(dims: readonly number[], strides: readonly number[]): Int32Array {
  const n = numel(dims);
  const out = new Int32Array(n);
  const idx = new Array<number>(dims.length).fill(0);
  let off = 0;
  for (let k = 0; k < n; k++) {
    out[k] = off;
    for (let d = dims.length - 1; d >= 0; d--) {
      idx[d]!++;
      off += strides[d]!;
      if (idx[d]! < dims[d]!) break;
      off -= strides[d]! * idx[d]!;
      idx[d] = 0;
    }
  }
  return out;
}

// The host implementation of the collective plan kind (decision 2501): all-reduce sums the ranks' partials in
// rank order (0, 1, ..., N-1) in f32, so a result never depends on timing; all-gather concatenates in rank order.
// Also the axis slicing that cuts a whole tensor (a weight, a State written from the host) into rank pieces.
import type { HostData } from "@poot/graph-ir";
import type { OutputData } from "../contract.js";

/** Sums `parts` element-wise in rank order into `into` (f32 rounding after every add, like a device's f32 sum). */
export function allReduceSum(parts: readonly ArrayLike<number>[], into: Float32Array): Float32Array {
  into.set(parts[0]!);
  for (let r = 1; r < parts.length; r++) {
    const p = parts[r]!;
    for (let i = 0; i < into.length; i++) into[i] = into[i]! + p[i]!;
  }
  return into;
}

/** Concatenates rank pieces of a tensor of whole shape `shape` along `axis`, in rank order. */
export function allGather(parts: readonly OutputData[], shape: readonly number[], axis: number): OutputData {
  const total = shape.reduce((a, b) => a * b, 1);
  const first = parts[0]!;
  const out = new (first.constructor as new (n: number) => OutputData)(total);
  const { outer, inner } = axisRuns(shape, axis);
  const piece = (shape[axis]! / parts.length) * inner;
  parts.forEach((p, r) => {
    for (let o = 0; o < outer; o++)
      out.set(p.subarray(o * piece, (o + 1) * piece), o * shape[axis]! * inner + r * piece);
  });
  return out;
}

/** Rank `rank`'s piece (of `ranks`) of `data`, a tensor of shape `shape`, along `axis` (same array type). */
export function slicePiece(
  data: HostData,
  shape: readonly number[],
  axis: number,
  rank: number,
  ranks: number,
): HostData {
  const { outer, inner } = axisRuns(shape, axis);
  const row = shape[axis]! * inner;
  const piece = (shape[axis]! / ranks) * inner;
  const Ctor = (ArrayBuffer.isView(data) ? data.constructor : Float64Array) as new (n: number) => Float64Array;
  const out = new Ctor(outer * piece);
  for (let o = 0; o < outer; o++)
    for (let i = 0; i < piece; i++) out[o * piece + i] = data[o * row + rank * piece + i]!;
  return out;
}

function axisRuns(shape: readonly number[], axis: number): { outer: number; inner: number } {
  const prod = (s: readonly number[]) => s.reduce((a, b) => a * b, 1);
  return { outer: prod(shape.slice(0, axis)), inner: prod(shape.slice(axis + 1)) };
}

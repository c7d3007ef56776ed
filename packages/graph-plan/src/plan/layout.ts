// Strided layouts: each value's memory as (root buffer, strides, offset). Views resolve to a layout
// over their source when one exists; in-place state updates resolve to the state's buffer.

import { isLiteral, stridesOf, type Eqn, type Graph, type ValueId } from "@poot/graph-ir";
import type { Region } from "../region.js";
import type { Access } from "./types.js";

/** True when equation `e` writes into its state operand in place (the state is read nowhere else). */
export function writesStateInPlace(g: Graph, e: Eqn, readers: readonly number[][]): ValueId | undefined {
  let stateArg: number | undefined;
  if (e.op === "DynamicUpdateSlice") stateArg = 0;
  else if (e.params.epilogue !== undefined || e.params.region !== undefined) {
    const r = (e.params.epilogue ?? e.params.region) as Region | null;
    const res = r?.nodes[r.result];
    const a = res?.op === "DynamicUpdateSlice" ? res.args[0] : undefined;
    // Epilogue region inputs are offset by the contraction's A and B (input 0 of the region is the accumulator).
    if (a !== undefined && "in" in a) stateArg = e.params.epilogue !== undefined ? a.in + 1 : a.in;
  }
  if (stateArg === undefined) return undefined;
  const s = e.inputs[stateArg];
  if (s === undefined || isLiteral(s) || g.values[s]!.storage.kind !== "state" || readers[s]!.length !== 1) return undefined;
  return s;
}

/** Computes every value's layout; views that cannot be expressed as strides get `undefined` (they need a copy). */
export function layouts(g: Graph, readers: readonly number[][]): Map<ValueId, Access> {
  const out = new Map<ValueId, Access>();
  const own = (v: ValueId, root: ValueId = v): Access => {
    const val = g.values[v]!;
    return { value: v, root, dtype: val.dtype, shape: val.shape, strides: stridesOf(val.shape), offset: 0 };
  };
  for (const v of g.values) if (v.storage.kind !== "device") out.set(v.id, own(v.id));
  for (const e of g.eqns) {
    const st = writesStateInPlace(g, e, readers);
    if (st !== undefined) { out.set(e.out, own(e.out, st)); continue; }
    const src = isLiteral(e.inputs[0] ?? { lit: 0, dtype: "f32" }) ? undefined : out.get(e.inputs[0] as number);
    const view = src === undefined ? undefined : viewLayout(g, e, src);
    out.set(e.out, view ?? own(e.out));
  }
  return out;
}

function contiguous(a: Access): boolean {
  const s = stridesOf(a.shape);
  return a.shape.every((d, i) => d === 1 || a.strides[i] === s[i]);
}

function viewLayout(g: Graph, e: Eqn, src: Access): Access | undefined {
  const o = g.values[e.out]!;
  const base = { value: e.out, root: src.root, dtype: o.dtype, shape: o.shape };
  switch (e.op) {
    case "Reshape":
      return contiguous(src) ? { ...base, strides: stridesOf(o.shape), offset: src.offset } : undefined;
    case "Transpose": {
      const perm = e.params.perm as number[];
      return { ...base, strides: perm.map((p) => src.strides[p]!), offset: src.offset };
    }
    case "Slice": {
      const start = e.params.start as number[], step = e.params.step as number[];
      return { ...base, strides: src.strides.map((s, i) => s * step[i]!), offset: src.offset + start.reduce((a, x, i) => a + x * src.strides[i]!, 0) };
    }
    case "Broadcast": {
      const pad = o.shape.length - src.shape.length;
      const strides = o.shape.map((_, i) => (i < pad || src.shape[i - pad] === 1 ? 0 : src.strides[i - pad]!));
      return { ...base, strides, offset: src.offset };
    }
    default:
      return undefined;
  }
}

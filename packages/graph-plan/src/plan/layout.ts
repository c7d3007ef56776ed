// Strided layouts: each value's memory as (root buffer, strides, offset). Views resolve to a layout
// over their source when one exists; in-place state updates resolve to the state's buffer.

import { isLiteral, stridesOf, type Eqn, type Graph, type ValueId } from "@poot/graph-ir";
import type { Region } from "../region.js";
import type { Access } from "./types.js";

/**
 * The state buffer equation `e` writes in place, if any: a DynamicUpdateSlice (or a region ending in a chain
 * of them) whose target is a State, or another in-place write of one, read by nothing else.
 */
export function writesStateInPlace(
  g: Graph,
  e: Eqn,
  readers: readonly number[][],
  lay: ReadonlyMap<ValueId, Access>,
): ValueId | undefined {
  let stateArg: number | undefined;
  if (e.op === "DynamicUpdateSlice") stateArg = 0;
  else if (e.params.epilogue !== undefined || e.params.region !== undefined) {
    const r = (e.params.epilogue ?? e.params.region) as Region | null;
    const node = r?.nodes[r.result];
    let a = node?.op === "DynamicUpdateSlice" ? node.args[0] : undefined;
    // Follow a chain of updates (one per sequence of a batch) back to the region input they all write.
    for (;;) {
      const prev = a !== undefined && "node" in a ? r!.nodes[a.node] : undefined;
      if (prev?.op !== "DynamicUpdateSlice") break;
      a = prev.args[0];
    }
    // Epilogue inputs after the accumulators map to op inputs shifted by one (A); accumulators are not op inputs.
    if (a !== undefined && "in" in a) stateArg = e.params.epilogue !== undefined ? a.in + 1 : a.in;
  }
  if (stateArg === undefined) return undefined;
  const s = e.inputs[stateArg];
  if (s === undefined || isLiteral(s) || readers[s]!.length !== 1) return undefined;
  if (g.values[s]!.storage.kind === "state") return s;
  const root = lay.get(s)?.root;
  return root !== undefined && root !== s && g.values[root]!.storage.kind === "state" ? root : undefined;
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
    const st = writesStateInPlace(g, e, readers, out);
    if (st !== undefined) {
      out.set(e.out, own(e.out, st));
      continue;
    }
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
      const start = e.params.start as number[],
        step = e.params.step as number[];
      return {
        ...base,
        strides: src.strides.map((s, i) => s * step[i]!),
        offset: src.offset + start.reduce((a, x, i) => a + x * src.strides[i]!, 0),
      };
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

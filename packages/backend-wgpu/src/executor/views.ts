// Graph outputs and state_outs that are views (a slice, transpose or broadcast of another buffer): their
// strided layout over the root, and the copy kernel that makes them dense where the host or a State needs it.

import { isLiteral, stridesOf, type Eqn, type Graph, type ScalarDType, type ValueId } from "@poot/graph-ir";
import { synthesizeElementwise, type SynthCaps, type SynthKernel } from "@poot/kernelgen";

/** A value's memory as a strided window of its root's buffer (in elements). */
export interface ViewLayout {
  readonly root: ValueId;
  readonly strides: readonly number[];
  readonly offset: number;
}

/**
 * The layout of `v` following view equations (Reshape of a contiguous source, Transpose, Slice, Broadcast)
 * the way graph-plan's planner aliases them; any other equation owns its buffer.
 */
export function viewLayout(g: Graph, v: ValueId, producers: ReadonlyMap<ValueId, Eqn> = producersOf(g)): ViewLayout {
  const val = g.values[v]!;
  const own: ViewLayout = { root: v, strides: stridesOf(val.shape), offset: 0 };
  const e = producers.get(v);
  const first = e?.inputs[0];
  if (e === undefined || first === undefined || isLiteral(first)) return own;
  if (!["Reshape", "Transpose", "Slice", "Broadcast"].includes(e.op)) return own;
  const src = viewLayout(g, first, producers);
  const sv = g.values[first]!;
  switch (e.op) {
    case "Reshape": {
      const dense = stridesOf(sv.shape);
      return sv.shape.every((d, i) => d === 1 || src.strides[i] === dense[i])
        ? { root: src.root, strides: stridesOf(val.shape), offset: src.offset }
        : own;
    }
    case "Transpose":
      return { root: src.root, strides: (e.params.perm as number[]).map((p) => src.strides[p]!), offset: src.offset };
    case "Slice": {
      const start = e.params.start as number[],
        step = e.params.step as number[];
      return {
        root: src.root,
        strides: src.strides.map((s, i) => s * step[i]!),
        offset: src.offset + start.reduce((a, x, i) => a + x * src.strides[i]!, 0),
      };
    }
    default: {
      const pad = val.shape.length - sv.shape.length;
      return {
        root: src.root,
        strides: val.shape.map((_, i) => (i < pad || sv.shape[i - pad] === 1 ? 0 : src.strides[i - pad]!)),
        offset: src.offset,
      };
    }
  }
}

/** Equation of each computed value. */
export function producersOf(g: Graph): Map<ValueId, Eqn> {
  return new Map(g.eqns.map((e) => [e.out, e]));
}

/** Whether a layout is the first numel(shape) elements of its root, densely. */
export function isDensePrefix(g: Graph, v: ValueId, l: ViewLayout): boolean {
  const shape = g.values[v]!.shape;
  const dense = stridesOf(shape);
  return l.offset === 0 && shape.every((d, i) => d === 1 || l.strides[i] === dense[i]);
}

/** A kernel copying the view `v` of its root (buffer `x`) into a dense buffer `y`. */
export function viewCopyKernel(g: Graph, v: ValueId, l: ViewLayout, caps: SynthCaps, name: string): SynthKernel {
  const val = g.values[v]!;
  const dtype = val.dtype as ScalarDType;
  const shape = val.shape.length === 0 ? [1] : val.shape;
  const strides = val.shape.length === 0 ? [0] : l.strides;
  return synthesizeElementwise(
    {
      name,
      shape,
      inputs: [{ name: "x", dtype, shape, strides, offset: l.offset }],
      nodes: [{ op: "leaf", name: "x" }],
      outputs: [{ name: "y", dtype, node: 0 }],
    },
    caps,
  );
}

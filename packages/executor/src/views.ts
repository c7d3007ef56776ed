// Where a view value lives in its root buffer (offset and strides), recomputed from the view equations the
// same way graph-plan lays them out, and the contiguous runs a strided view covers (for copies out of it).

import { stridesOf, isLiteral, type Graph, type ValueId } from "@poot/graph-ir";
import { invariant } from "./errors.js";

const VIEWS = new Set(["Reshape", "Transpose", "Slice", "Broadcast"]);

/** A value's elements as offset + Σ index · stride over its root buffer, in elements. */
export interface ViewLayout {
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly offset: number;
}

/**
 * The layout of `v` over `root` (graph-plan's `buffers().aliases` root of `v`): identity when v is the root,
 * else composed through Reshape/Transpose/Slice/Broadcast. Backends use it for outputs and state_outs that
 * alias their root without being its dense prefix.
 */
export function viewLayout(g: Graph, v: ValueId, root: ValueId): ViewLayout {
  const val = g.values[v]!;
  if (v === root) return { shape: val.shape, strides: stridesOf(val.shape), offset: 0 };
  const e = g.eqns.find((x) => x.out === v);
  invariant(e !== undefined, `value ${v} aliases ${root} but has no defining equation`);
  // graph-plan aliases a non-view only for an in-place State write, which covers its root densely.
  if (!VIEWS.has(e.op)) return { shape: val.shape, strides: stridesOf(val.shape), offset: 0 };
  invariant(!isLiteral(e.inputs[0]!), `view value ${v} views a literal`);
  const src = viewLayout(g, e.inputs[0] as ValueId, root);
  const shape = val.shape;
  switch (e.op) {
    case "Reshape":
      invariant(
        src.shape.every((d, i) => d === 1 || src.strides[i] === stridesOf(src.shape)[i]),
        `reshape of a strided view (value ${v})`,
      );
      return { shape, strides: stridesOf(shape), offset: src.offset };
    case "Transpose":
      return { shape, strides: (e.params.perm as number[]).map((p) => src.strides[p]!), offset: src.offset };
    case "Slice": {
      const start = e.params.start as number[],
        step = e.params.step as number[];
      return {
        shape,
        strides: src.strides.map((s, i) => s * step[i]!),
        offset: src.offset + start.reduce((a, x, i) => a + x * src.strides[i]!, 0),
      };
    }
    case "Broadcast": {
      const pad = shape.length - src.shape.length;
      return {
        shape,
        strides: shape.map((_, i) => (i < pad || src.shape[i - pad] === 1 ? 0 : src.strides[i - pad]!)),
        offset: src.offset,
      };
    }
    default:
      invariant(false, `value ${v}: ${e.op} is listed as a view but has no layout rule`);
  }
}

/**
 * Contiguous runs of a layout in row-major element order: [element offset in root, element count]. Copying
 * the runs one after another yields the view densely (what a graph output or a state_out must hold).
 */
export function viewRuns(l: ViewLayout): [number, number][] {
  // The innermost axes that are laid out densely form one run.
  let inner = l.shape.length,
    len = 1;
  while (inner > 0) {
    const d = inner - 1;
    if (l.shape[d] !== 1 && l.strides[d] !== len) break;
    len *= l.shape[d]!;
    inner--;
  }
  const outer = l.shape.slice(0, inner);
  const out: [number, number][] = [];
  const n = outer.reduce((a, b) => a * b, 1);
  for (let i = 0; i < n; i++) {
    let rest = i,
      off = l.offset;
    for (let d = outer.length - 1; d >= 0; d--) {
      off += (rest % outer[d]!) * l.strides[d]!;
      rest = Math.floor(rest / outer[d]!);
    }
    const last = out[out.length - 1];
    if (last !== undefined && last[0] + last[1] === off) last[1] += len;
    else out.push([off, len]);
  }
  return out;
}

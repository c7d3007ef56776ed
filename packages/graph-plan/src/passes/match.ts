// Pattern helpers shared by the rule tables: reading literals, peeling exact widening casts and views,
// and recognizing iota values (folded or not).

import { isLiteral, numel, type Eqn, type IotaParams, type Operand, type ValueId } from "@poot/graph-ir";
import type { Draft } from "../draft.js";

/** The value of a literal operand, or of a one-element Computed value; undefined otherwise. */
export function scalarOf(d: Draft, o: Operand | undefined): number | undefined {
  if (o === undefined) return undefined;
  if (isLiteral(o)) return o.lit;
  const v = d.values[o]!;
  if (v.storage.kind === "computed" && numel(v.shape) === 1) return v.storage.data[0];
  return undefined;
}

/** The equation defining a value operand (undefined for literals and inputs). */
export function defOf(d: Draft, o: Operand | undefined): Eqn | undefined {
  return o === undefined || isLiteral(o) ? undefined : d.def(o);
}

/** The defining equation when it has op `op`. */
export function defIs(d: Draft, o: Operand | undefined, ...ops: string[]): Eqn | undefined {
  const e = defOf(d, o);
  return e !== undefined && ops.includes(e.op) ? e : undefined;
}

/** Follows exact widening casts (f16/bf16 -> f32, f32 -> f32) back to their source. */
export function peelWiden(d: Draft, v: ValueId): ValueId {
  for (;;) {
    const e = defIs(d, v, "Cast");
    if (e === undefined || isLiteral(e.inputs[0]!)) return v;
    const src = d.values[e.inputs[0] as number]!;
    const to = e.params.to;
    const widening = to === "f32" && (src.dtype === "f16" || src.dtype === "bf16" || src.dtype === "f32");
    if (!widening) return v;
    v = e.inputs[0] as number;
  }
}

/** Iota parameters of a value: an Iota equation, or a Computed value that iota folding made. */
export function iotaOf(d: Draft, o: Operand | undefined): IotaParams | undefined {
  if (o === undefined || isLiteral(o)) return undefined;
  const e = d.def(o);
  if (e?.op === "Iota") return e.params as unknown as IotaParams;
  return d.iotaOf.get(o);
}

/** Follows Reshape/Broadcast views that only add or expand size-1 axes, returning the source. */
export function peelUnitViews(d: Draft, v: ValueId): ValueId {
  for (;;) {
    const e = defIs(d, v, "Reshape", "Broadcast");
    if (e === undefined) return v;
    const src = d.values[e.inputs[0] as number]!;
    const out = d.values[v]!;
    // Only views that keep every non-unit dim in order are peeled (a position index stays the same index).
    const a = src.shape.filter((x) => x !== 1),
      b = out.shape.filter((x) => x !== 1);
    if (e.op === "Reshape" && (a.length !== b.length || a.some((x, i) => x !== b[i]))) return v;
    if (
      e.op === "Broadcast" &&
      src.shape.some((x, i) => x !== 1 && x !== out.shape[out.shape.length - src.shape.length + i])
    )
      return v;
    v = e.inputs[0] as number;
  }
}

/** True when a literal/scalar operand equals x (NaN never equal). */
export function isScalar(d: Draft, o: Operand | undefined, x: number): boolean {
  const s = scalarOf(d, o);
  return s !== undefined && (s === x || (Object.is(s, -0) && x === 0));
}

/** Normalized last-axis check for an axis list param. */
export function isLastAxis(axes: unknown, rank: number): boolean {
  return Array.isArray(axes) && axes.length === 1 && (axes[0] === -1 || axes[0] === rank - 1);
}

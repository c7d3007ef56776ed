// A reduction inside a region (region-emit.ts) computed inline: the element at output coordinates `c` as a sequential
// loop over the reduced axes (sum, max, min, argmax), for regions whose reductions are not cached rows.

import type { Builder, Val } from "@poot/kernel-dsl";
import type { RegionArg, RegionNode } from "@poot/graph-plan";
import { exprTypeOf, type ExprType } from "../synth/expr.js";
import type { Coords, RegionEmitter } from "./region-emit.js";

/** Sequential reduction of node `n` (graph-ir Reduce: sum | max | min | argmax over `axes`, keepdim or not) at `c`. */
export function emitInlineReduce(em: RegionEmitter, b: Builder, n: RegionNode, c: Coords): Val<ExprType> {
  const p = n.params as { kind: string; axes: number[]; keepdim: boolean };
  const src = n.args[0] as RegionArg;
  const inShape = em.shapeOf(src);
  const r = inShape.length;
  const axes = p.axes.map((a) => (a < 0 ? a + r : a));
  const t = exprTypeOf(n.dtype);
  const srcType = exprTypeOf(em.dtypeOf(src));
  const isFloat = srcType === "f32";
  // Coordinates of the operand: kept axes from c (in order), reduced axes from the loop variables.
  const kept: Val<"u32">[] = [];
  let ci = 0;
  for (let d = 0; d < r; d++) {
    if (axes.includes(d)) {
      if (p.keepdim) ci++;
      kept.push(b.u32(0));
    } else kept.push(c[ci++] as Val<"u32">);
  }
  const init = p.kind === "sum" ? 0 : p.kind === "min" ? Infinity : -Infinity;
  const acc = b.var_(
    isFloat
      ? b.f32(init)
      : srcType === "i32"
        ? b.i32(p.kind === "sum" ? 0 : p.kind === "min" ? 0x7fffffff : -0x80000000)
        : b.u32(p.kind === "min" ? 0xffffffff : 0),
    "racc",
  ) as unknown as { set(v: Val<ExprType>): void } & Val<ExprType>;
  const bestI = p.kind === "argmax" ? b.var_(b.u32(0xffffffff), "rarg") : undefined;
  const loop = (k: number, coords: Val<"u32">[]): void => {
    if (k === axes.length) {
      em.scoped(() => {
        const v = em.arg(src, coords) as Val<"f32">;
        const a = acc as unknown as Val<"f32">;
        if (p.kind === "argmax") {
          const j = coords[axes[0] as number] as Val<"u32">;
          // First maximal index; NaN counts as the maximum (numpy).
          const vn = v.ne(v),
            an = a.ne(a);
          const better = isFloat ? an.not().and(vn.or(v.gt(a))) : v.gt(a);
          b.if_(better.or((bestI as Val<"u32">).eq(0xffffffff)), () => {
            acc.set(v);
            (bestI as { set(x: Val<ExprType>): void }).set(j);
          });
        } else if (p.kind === "sum") acc.set(a.add(v));
        else {
          const m = p.kind === "max" ? b.max(a, v) : b.min(a, v);
          acc.set(isFloat ? b.select(a.ne(a).or(v.ne(v)), a.add(v), m) : m);
        }
      });
      return;
    }
    const ax = axes[k] as number;
    b.for_(
      b.u32(0),
      inShape[ax] as number,
      1,
      (j) =>
        loop(
          k + 1,
          coords.map((x, d) => (d === ax ? j : x)),
        ),
      `r${ax}`,
    );
  };
  loop(0, kept);
  if (p.kind === "argmax") return (bestI as Val<"u32">).i32();
  return t === srcType ? acc : (acc as Val<"f32">).cast(t as "f32");
}

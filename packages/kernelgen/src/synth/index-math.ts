// Strided index math shared by the synthesizers: numpy broadcasting strides, the linear thread id over a 2-D
// grid, and the decomposition of a linear output index into per-axis indices and strided input offsets.

import type { Builder, Val } from "@poot/kernel-dsl";
import { KernelgenError } from "../errors.js";

/** Row-major strides of `shape`. */
export function contiguousStrides(shape: readonly number[]): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    s[d] = acc;
    acc *= shape[d] as number;
  }
  return s;
}

/** Clamps an i32 start or index `v` into [0, hi] (hi ≥ 0) as a u32 named `name`, as XLA and graph-ir do. */
export function clampIndex(b: Builder, v: Val<"i32">, hi: number, name: string): Val<"u32"> {
  return b.let_(b.min(b.max(v, b.i32(0)), b.i32(hi)).u32(), name);
}

/** Strides of `inShape` (row-major) broadcast to `outShape` by numpy rules (0 on broadcast axes). */
export function broadcastStrides(
  synth: string,
  name: string,
  inShape: readonly number[],
  outShape: readonly number[],
): number[] {
  const r = outShape.length;
  if (inShape.length > r)
    throw new KernelgenError("bad_shape", `${name} has rank ${inShape.length} > ${r}`, {
      synth,
      param: name,
      value: inShape,
    });
  const own = contiguousStrides(inShape);
  return outShape.map((od, d) => {
    const j = d - (r - inShape.length);
    if (j < 0) return 0;
    const id = inShape[j] as number;
    if (id === od) return id === 1 ? 0 : (own[j] as number);
    if (id === 1) return 0;
    throw new KernelgenError(
      "bad_shape",
      `${name} [${inShape.join(", ")}] does not broadcast to [${outShape.join(", ")}]`,
      { synth, param: name, value: inShape },
    );
  });
}

/** The thread's linear index over a 2-D grid of 1-D workgroups: (wid.y · nwg.x + wid.x) · wg + lid.x. */
export function linearThread(b: Builder, wg: number): Val<"u32"> {
  const { wid, nwg, lid, let_ } = b;
  return let_(wid.y.mul(nwg.x).add(wid.x).mul(wg).add(lid.x), "e");
}

/** Per-axis indices of a linear index and offset builders for strided views over them. */
export interface IndexParts {
  /** Index along each axis (u32), only when requested or needed. */
  readonly axes: readonly Val<"u32">[];
  /** Element offset of view `v` (Σ axis_d · stride_d + base). */
  offset(view: number, base: number): Val<"u32">;
}

/**
 * Splits linear index `e` over `shape` into axis indices (skipped when every view is the contiguous layout and
 * no axis is needed, so the common case costs nothing) and returns strided offsets for `views`.
 */
export function emitIndex(
  b: Builder,
  e: Val<"u32">,
  shape: readonly number[],
  views: readonly (readonly number[])[],
  needAxes = false,
): IndexParts {
  const { let_, u32 } = b;
  const contiguous = contiguousStrides(shape);
  const isContig = (s: readonly number[]) => s.every((x, d) => x === contiguous[d] || shape[d] === 1);
  if (!needAxes && views.every(isContig)) return { axes: [], offset: (_v, base) => (base === 0 ? e : e.add(base)) };
  const axes: Val<"u32">[] = new Array(shape.length);
  let rest = e;
  for (let d = shape.length - 1; d >= 0; d--) {
    const n = shape[d] as number;
    if (n === 1) axes[d] = u32(0);
    else if (d === 0) axes[d] = rest;
    else {
      axes[d] = let_(rest.rem(n), `i${d}`);
      rest = let_(rest.div(n), `q${d}`);
    }
  }
  return {
    axes,
    offset: (v, base) => {
      const s = views[v] as readonly number[];
      if (isContig(s)) return base === 0 ? e : let_(e.add(base), "off");
      let acc: Val<"u32"> = u32(base);
      s.forEach((st, d) => {
        if (st !== 0 && shape[d] !== 1)
          acc = acc.add(st === 1 ? (axes[d] as Val<"u32">) : (axes[d] as Val<"u32">).mul(st));
      });
      return let_(acc, "off");
    },
  };
}

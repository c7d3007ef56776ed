// graph-plan Accesses (strided windows of root buffers) as kernel buffers: element types, strided loads and
// stores at symbolic coordinates, and the layout checks the fixed-layout synthesizers need.

import type { Arr, Builder, ElemType, Val } from "@poot/kernel-dsl";
import { isPacked } from "@poot/graph-ir";
import type { DType, ScalarDType } from "@poot/graph-ir";
import type { Access } from "@poot/graph-plan";
import { KernelgenError } from "../errors.js";
import type { ExprType } from "../synth/expr.js";
import { contiguousStrides } from "../synth/index-math.js";
import { storeAs } from "../synth/storage.js";
import type { Coords } from "./region-emit.js";

/** Buffer element type for a graph dtype (bool as u8, packed data as u32 words). */
export function elemForDType(d: DType): ElemType {
  if (isPacked(d)) return "u32";
  return d === "bool" ? "u8" : d;
}

/** Element index of `coords` in an access: offset + Σ coord · stride (size-1 and stride-0 axes skipped). */
export function accessIndex(b: Builder, a: Access, coords: Coords): Val<"u32"> {
  let idx: Val<"u32"> = b.u32(a.offset);
  a.strides.forEach((s, d) => {
    if (s !== 0 && (a.shape[d] as number) > 1)
      idx = idx.add(s === 1 ? (coords[d] as Val<"u32">) : (coords[d] as Val<"u32">).mul(s));
  });
  return b.let_(idx, "ai");
}

/** Loads an access element as its expression type (bool from u8). */
export function loadAccess(b: Builder, buf: Arr, a: Access, coords: Coords): Val<ExprType> {
  const v = buf.at(accessIndex(b, a, coords)) as Val<ExprType>;
  return a.dtype === "bool" ? (v as Val<"u32">).ne(0) : v;
}

/** Stores `v` into an access element. */
export function storeAccess(b: Builder, buf: Arr, a: Access, coords: Coords, v: Val<ExprType>): void {
  storeAs(b, buf, a.dtype as ScalarDType, accessIndex(b, a, coords), v);
}

/** True if the access is the whole root buffer in row-major order (what fixed-layout synthesizers assume). */
export function isDense(a: Access): boolean {
  const c = contiguousStrides(a.shape);
  return a.offset === 0 && a.strides.every((s, d) => s === c[d] || a.shape[d] === 1);
}

/** Throws `bad_shape` unless `a` is dense. */
export function requireDense(synth: string, what: string, a: Access): void {
  if (!isDense(a))
    throw new KernelgenError(
      "bad_shape",
      `${what} must be a dense row-major buffer (offset ${a.offset}, strides [${a.strides.join(", ")}])`,
      { synth, param: what, value: a.value },
    );
}

/** Splits linear index `e` into coordinates of `shape`. */
export function delinearize(b: Builder, e: Val<"u32">, shape: readonly number[]): Val<"u32">[] {
  const out: Val<"u32">[] = new Array(shape.length);
  let rest = e;
  for (let d = shape.length - 1; d >= 0; d--) {
    const n = shape[d] as number;
    if (n === 1) out[d] = b.u32(0);
    else if (d === 0) out[d] = rest;
    else {
      out[d] = b.let_(rest.rem(n), `c${d}`);
      rest = b.let_(rest.div(n), `q${d}`);
    }
  }
  return out;
}

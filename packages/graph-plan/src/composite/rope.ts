// Rope: rotary embedding (rotate-half or interleaved pairs) as one op, and the op table that fused regions may use
// (the primitives plus Rope, so a RoPE can sit inside a contraction's epilogue).

import {
  PRIMITIVE_OPS,
  extendOps,
  numel,
  roundInPlace,
  type OpDef,
  type OpTable,
  type ScalarDType,
} from "@poot/graph-ir";
import { broadcastMap, mustBroadcast, requireFloat } from "./util.js";

/** Params of Rope. */
export type RopeParams = {
  /** Rotation layout: "half" pairs element i with i + D/2 (rotate_half); "interleaved" pairs 2i with 2i+1. */
  readonly style: "half" | "interleaved";
  /** Dtype of every step of the replaced chain (products and sum are rounded to it). */
  readonly dtype: "f32" | "f16" | "bf16";
};

/**
 * Rope(x, cos, sin) = x*cos + rot(x)*sin over the last axis, rot = concat(-x[D/2:], x[:D/2]) ("half") or
 * rot[2i] = -x[2i+1], rot[2i+1] = x[2i] ("interleaved"); cos/sin broadcast to x.
 */
export const Rope: OpDef<RopeParams> = {
  arity: 3,
  category: "composite",
  view: false,
  doc: "RoPE (rotate-half or interleaved pairs): round(round(x*cos) + round(rot(x)*sin)), each step rounded to `dtype`",
  infer([x, c, s], p, ctx) {
    requireFloat(ctx, "x", x!.dtype);
    requireFloat(ctx, "cos", c!.dtype);
    requireFloat(ctx, "sin", s!.dtype);
    if (p.style !== "half" && p.style !== "interleaved")
      ctx.fail("bad-param", `Rope.style ${JSON.stringify(p.style)} is not supported`);
    if (!["f32", "f16", "bf16"].includes(p.dtype)) ctx.fail("bad-param", "Rope.dtype must be a float dtype");
    const d = x!.shape[x!.shape.length - 1];
    if (d === undefined || d % 2 !== 0) ctx.fail("shape-mismatch", "Rope needs an even last dim");
    for (const t of [c!, s!]) {
      const b = mustBroadcast(ctx, x!.shape, t.shape, "cos/sin");
      if (b.length !== x!.shape.length || b.some((v, i) => v !== x!.shape[i]))
        ctx.fail("shape-mismatch", "cos/sin must broadcast to x's shape");
    }
    return { dtype: p.dtype, shape: x!.shape };
  },
  evaluate([x, c, s], p, out) {
    const n = numel(out.shape);
    const d = out.shape[out.shape.length - 1]!,
      h = d / 2,
      half = p.style === "half";
    const ic = broadcastMap(out.shape, c!.shape),
      is = broadcastMap(out.shape, s!.shape);
    const xd = x!.data,
      cd = c!.data,
      sd = s!.data;
    const m1 = new Float64Array(n),
      m2 = new Float64Array(n);
    for (let k = 0; k < n; k++) {
      const j = k % d;
      // rotate_half: first half takes -x[j + D/2], second half takes x[j - D/2]; interleaved: 2i takes
      // -x[2i+1], 2i+1 takes x[2i].
      const rot = half ? (j < h ? -xd[k + h]! : xd[k - h]!) : j % 2 === 0 ? -xd[k + 1]! : xd[k - 1]!;
      m1[k] = xd[k]! * cd[ic === null ? k : ic[k]!]!;
      m2[k] = rot * sd[is === null ? k : is[k]!]!;
    }
    roundInPlace(p.dtype as ScalarDType, m1);
    roundInPlace(p.dtype as ScalarDType, m2);
    for (let k = 0; k < n; k++) m1[k] = m1[k]! + m2[k]!;
    return m1;
  },
};

/** Ops a fused region may hold: every primitive plus Rope. */
export const REGION_OPS: OpTable = extendOps({ Rope });

// Fused and FusedRow: a pointwise region, and a reduction-rooted row region (RMSNorm, softmax) with
// its pointwise epilogue. Their reference semantics run the region node by node.

import type { OpDef } from "@poot/graph-ir";
import { evalRegion, regionParam, typeRegion, type Region } from "../region.js";
import { REGION_OPS } from "./rope.js";

/** Params of Fused / FusedRow. */
export type FusedParams = {
  /** The fused expression DAG over the op's inputs. */
  readonly region: Region;
  /** Schedule chosen by tiling (not part of the semantics). */
  readonly schedule?: { readonly [k: string]: number | string };
};

/** A region of pointwise ops, views and index loads, run as one kernel. */
export const Fused: OpDef<FusedParams> = {
  arity: { min: 0 },
  category: "composite",
  view: false,
  doc: "pointwise region: each node evaluated as its primitive and rounded to its dtype",
  infer(inputs, p, ctx) {
    const r = regionParam(ctx, p.region);
    if (r.nodes.some((n) => n.op === "Reduce" || n.op === "MatMul"))
      ctx.fail("bad-param", "a Fused region holds no reductions or contractions; use FusedRow or ContractionEpilogue");
    return typeRegion(r, inputs, REGION_OPS, ctx);
  },
  evaluate: (inputs, p, _o, ctx) => evalRegion(p.region, inputs, REGION_OPS, ctx),
};

/** A region whose reductions all run along the last axis with keepdim (one row per workgroup), plus its epilogue. */
export const FusedRow: OpDef<FusedParams> = {
  arity: { min: 1 },
  category: "composite",
  view: false,
  doc: "row region: last-axis keepdim reductions and pointwise ops, evaluated node by node",
  infer(inputs, p, ctx) {
    const r = regionParam(ctx, p.region);
    const t = typeRegion(r, inputs, REGION_OPS, ctx);
    const reduces = r.nodes.filter((n) => n.op === "Reduce");
    if (reduces.length === 0) ctx.fail("bad-param", "a FusedRow region needs a reduction");
    for (const n of reduces) {
      const axes = n.params.axes as number[];
      const rank = n.shape.length;
      if (n.params.keepdim !== true || axes.length !== 1 || (axes[0] !== -1 && axes[0] !== rank - 1))
        ctx.fail("bad-param", "FusedRow reductions must reduce the last axis with keepdim");
    }
    if (r.nodes.some((n) => n.op === "MatMul")) ctx.fail("bad-param", "a FusedRow region holds no contractions");
    return t;
  },
  evaluate: (inputs, p, _o, ctx) => evalRegion(p.region, inputs, REGION_OPS, ctx),
};

// IndexedMatMul: the routed-expert contraction. Each token row (or each token's slot row) times the [N, K] weight
// of a selected expert; experts are named by ids, or by the non-zero entries of a dense gate matrix (routed experts).

import {
  decodePacked,
  dtypeName,
  isPacked,
  numel,
  roundInPlace,
  type OpContext,
  type ScalarDType,
  type OpDef,
  type Tensor,
  type ValueType,
} from "@poot/graph-ir";
import { evalRegion, regionParam, typeRegion, type Region } from "../region.js";
import { REGION_OPS } from "./rope.js";
import { requireFloat } from "./util.js";

/**
 * Routing by a dense gate matrix `gates [T, E]` (what a top-k router leaves: zero outside the chosen experts).
 * Slot s of token t is the s-th expert e, in ascending e, with `gates[t, e] != 0` (NaN counts as non-zero).
 */
export type ExpertRouting = {
  readonly by: "gates";
  /** How many slots a token has (the router's top-k); more non-zero gates in a row is an error. */
  readonly slots: number;
  /**
   * "slots": the result is the per-slot epilogue value [T, S, N] (0 in empty slots); "sum": the values of the
   * filled slots summed in ascending expert order (float64 from +0, rounded to the epilogue's dtype) to [T, N].
   */
  readonly combine: "slots" | "sum";
  /** For "sum": a region over (the sum [T, N], ...extra) applied after it (a residual add); or null. */
  readonly post: Region | null;
};

/** Params of IndexedMatMul. */
export type IndexedMatMulParams = {
  /** Dtype the accumulators are rounded to before the epilogue. */
  readonly accDtype: "f32" | "f16" | "bf16";
  /** How many weights share x (horizontal fusion of gate and up projections); default 1. */
  readonly heads?: number;
  /**
   * Epilogue over the accumulators [T, S, N] (one per head), then (gate routing only) the slot's gate weight
   * [T, S, 1], then the extra operands; or null (the accumulator itself).
   */
  readonly epilogue: Region | null;
  /** Routing by a dense gate matrix; absent: explicit ids. */
  readonly routing?: ExpertRouting;
  /** Schedule chosen by tiling (not part of the semantics). */
  readonly schedule?: { readonly [k: string]: number | string };
};

interface Shape3 {
  t: number;
  s: number;
  k: number;
  n: number;
  e: number;
  perSlot: boolean;
}

function dims(inputs: readonly ValueType[], p: IndexedMatMulParams, ctx: OpContext): Shape3 {
  const h = p.heads ?? 1;
  if (!Number.isInteger(h) || h < 1) ctx.fail("bad-param", "heads must be a positive integer");
  const x = inputs[0]!,
    ws = inputs.slice(1, 1 + h),
    route = inputs[1 + h];
  if (route === undefined)
    return ctx.fail(
      "bad-arity",
      `IndexedMatMul needs x, ${h} weight(s) and ${p.routing === undefined ? "ids" : "gates"}`,
    );
  requireFloat(ctx, "x", x.dtype);
  const w = ws[0]!;
  for (const wi of ws) {
    if (!isPacked(wi.dtype)) requireFloat(ctx, "w", wi.dtype);
    if (
      wi.shape.length !== 3 ||
      wi.shape.some((d, i) => d !== w.shape[i]) ||
      dtypeName(wi.dtype) !== dtypeName(w.dtype)
    )
      ctx.fail("shape-mismatch", "the weights sharing x must all be [E, N, K] of one shape and dtype");
  }
  const [e, n, kw] = w.shape as [number, number, number];
  if (!["f32", "f16", "bf16"].includes(p.accDtype)) ctx.fail("bad-param", "accDtype must be a float dtype");
  const perSlot = x.shape.length === 3;
  if (x.shape.length !== 2 && !(perSlot && p.routing !== undefined))
    ctx.fail("shape-mismatch", "x must be [T, K] (or [T, S, K] per slot with gate routing)");
  const t = x.shape[0]!,
    k = x.shape[x.shape.length - 1]!;
  if (kw !== k) ctx.fail("shape-mismatch", `x has K=${k} but the weights are [${w.shape.join(",")}]`);
  if (p.routing === undefined) {
    if (route.dtype !== "i32" || route.shape.length !== 2 || route.shape[0] !== t)
      ctx.fail("shape-mismatch", `ids must be i32 [${t}, S], got [${route.shape.join(",")}]`);
    return { t, s: route.shape[1]!, k, n, e, perSlot };
  }
  const r = p.routing;
  if (r.by !== "gates" || !Number.isInteger(r.slots) || r.slots < 1 || (r.combine !== "slots" && r.combine !== "sum"))
    ctx.fail("bad-param", "routing must be { by: gates, slots >= 1, combine: slots | sum, post }");
  requireFloat(ctx, "gates", route.dtype);
  if (route.shape.length !== 2 || route.shape[0] !== t || route.shape[1] !== e)
    ctx.fail("shape-mismatch", `gates must be [${t}, ${e}], got [${route.shape.join(",")}]`);
  if (perSlot && x.shape[1] !== r.slots) ctx.fail("shape-mismatch", `per-slot x must be [${t}, ${r.slots}, ${k}]`);
  if (r.combine === "slots" && r.post !== null) ctx.fail("bad-param", "post applies only to combine sum");
  return { t, s: r.slots, k, n, e, perSlot };
}

function infer(inputs: readonly ValueType[], p: IndexedMatMulParams, ctx: OpContext): ValueType {
  const d = dims(inputs, p, ctx);
  const h = p.heads ?? 1;
  const gate = p.routing === undefined ? [] : [{ dtype: inputs[1 + h]!.dtype, shape: [d.t, d.s, 1] }];
  const extra = inputs.slice(2 + h);
  const acc: ValueType = { dtype: p.accDtype, shape: [d.t, d.s, d.n] };
  if (p.epilogue === null && h !== 1) ctx.fail("bad-arity", "several weights need an epilogue");
  const slot =
    p.epilogue === null
      ? acc
      : typeRegion(
          regionParam(ctx, p.epilogue, "epilogue"),
          [...Array.from({ length: h }, () => acc), ...gate, ...extra],
          REGION_OPS,
          ctx,
        );
  if (p.routing === undefined || p.routing.combine === "slots") return slot;
  if (slot.shape.length !== 3 || slot.shape[0] !== d.t || slot.shape[1] !== d.s)
    ctx.fail("shape-mismatch", `the per-slot epilogue must give [${d.t}, ${d.s}, N]`);
  requireFloat(ctx, "the per-slot epilogue", slot.dtype);
  const sum: ValueType = { dtype: slot.dtype, shape: [d.t, slot.shape[2]!] };
  return p.routing.post === null
    ? sum
    : typeRegion(regionParam(ctx, p.routing.post, "post"), [sum, ...extra], REGION_OPS, ctx);
}

/** Weights as f32 values: packed ones decoded exactly as DecodePacked (then stored as f32). */
function weightData(w: Tensor): ArrayLike<number> {
  if (!isPacked(w.dtype)) return w.data;
  const d = decodePacked(w.dtype.packed, w.data as Uint8Array, numel(w.shape));
  for (let i = 0; i < d.length; i++) d[i] = Math.fround(d[i]!);
  return d;
}

/** Experts of each token slot: explicit ids, or the non-zero gates of the row in ascending order (-1: empty slot). */
function slotExperts(route: Tensor, p: IndexedMatMulParams, d: Shape3, ctx: OpContext): Int32Array {
  const ex = new Int32Array(d.t * d.s).fill(-1);
  if (p.routing === undefined) {
    for (let i = 0; i < ex.length; i++) {
      const id = route.data[i]!;
      if (id < 0 || id >= d.e)
        ctx.fail("index-out-of-range", `expert id ${id} at [${Math.floor(i / d.s)},${i % d.s}] is outside [0, ${d.e})`);
      ex[i] = id;
    }
    return ex;
  }
  for (let t = 0; t < d.t; t++) {
    let s = 0;
    for (let e = 0; e < d.e; e++) {
      if (route.data[t * d.e + e] === 0) continue;
      if (s >= d.s) ctx.fail("index-out-of-range", `row ${t} of the gates has more than ${d.s} non-zero entries`);
      ex[t * d.s + s++] = e;
    }
  }
  return ex;
}

/** IndexedMatMul(x, w_0..w_{h-1}, ids | gates, ...extra): acc_h[t, s, n] = sum_k x[t, (s,) k] * w_h[expert(t, s), n, k]. */
export const IndexedMatMul: OpDef<IndexedMatMulParams> = {
  arity: { min: 3 },
  category: "composite",
  view: false,
  doc: "routed contraction: each token (slot) row times its selected experts' [N, K] weights, float64 sums in increasing k; the epilogue per slot; gate routing may sum the slots in ascending expert order",
  infer: (inputs, p, ctx) => infer(inputs, p, ctx),
  evaluate(inputs, p, out, ctx) {
    const d = dims(inputs, p, ctx);
    const h = p.heads ?? 1;
    const x = inputs[0]!,
      route = inputs[1 + h]!,
      extra = inputs.slice(2 + h) as Tensor[];
    const ex = slotExperts(route, p, d, ctx);
    const accs = inputs.slice(1, 1 + h).map((w) => {
      const wd = weightData(w);
      const acc = new Float64Array(d.t * d.s * d.n);
      for (let ts = 0; ts < d.t * d.s; ts++) {
        const e = ex[ts]!;
        if (e < 0) continue;
        const xo = (d.perSlot ? ts : Math.floor(ts / d.s)) * d.k;
        for (let c = 0; c < d.n; c++) {
          let sum = 0;
          for (let kk = 0; kk < d.k; kk++) sum += x.data[xo + kk]! * wd[(e * d.n + c) * d.k + kk]!;
          acc[ts * d.n + c] = sum;
        }
      }
      roundInPlace(p.accDtype, acc);
      return acc;
    });
    const accT = accs.map((data): Tensor => ({ dtype: p.accDtype, shape: [d.t, d.s, d.n], data }));
    const gate: Tensor[] = [];
    if (p.routing !== undefined) {
      const g = new Float64Array(d.t * d.s);
      for (let ts = 0; ts < g.length; ts++) g[ts] = ex[ts]! < 0 ? 0 : route.data[Math.floor(ts / d.s) * d.e + ex[ts]!]!;
      gate.push({ dtype: route.dtype, shape: [d.t, d.s, 1], data: g });
    }
    const slot = p.epilogue === null ? accs[0]! : evalRegion(p.epilogue, [...accT, ...gate, ...extra], REGION_OPS, ctx);
    if (p.routing === undefined) return slot;
    const n = slot.length / (d.t * d.s);
    if (p.routing.combine === "slots") {
      const res = Float64Array.from(slot as ArrayLike<number>);
      for (let ts = 0; ts < ex.length; ts++) if (ex[ts]! < 0) res.fill(0, ts * n, (ts + 1) * n);
      return res;
    }
    // Empty slots are skipped: in the dense form they add 0 · y = ±0 to a sum that is never -0, which changes nothing.
    const sum = new Float64Array(d.t * n);
    for (let t = 0; t < d.t; t++)
      for (let c = 0; c < n; c++) {
        let s = 0;
        for (let j = 0; j < d.s; j++) if (ex[t * d.s + j]! >= 0) s += slot[(t * d.s + j) * n + c]!;
        sum[t * n + c] = s;
      }
    const sumDtype = (p.epilogue === null ? p.accDtype : p.epilogue.nodes[p.epilogue.result]!.dtype) as ScalarDType;
    roundInPlace(sumDtype, sum);
    if (p.routing.post === null) return sum;
    return evalRegion(p.routing.post, [{ dtype: sumDtype, shape: [d.t, n], data: sum }, ...extra], REGION_OPS, ctx);
  },
};

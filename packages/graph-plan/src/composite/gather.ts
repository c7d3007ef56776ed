// Index-driven composites: PackedRowGather (whole packed rows gathered and decoded in one pass) and
// IndexedMatMul (routed-expert contraction: each token row times the weight of its selected expert).

import { decodePacked, dtypeName, isPacked, numel, roundInPlace, storageBytes, type OpDef, type Tensor } from "@poot/graph-ir";
import { evalRegion, regionParam, typeRegion, type Region } from "../region.js";
import { REGION_OPS } from "./rope.js";
import { requireFloat } from "./util.js";

/** PackedRowGather(table packed [R, ...], ids i32) -> f32 rows, equal to DecodePacked(Gather(table, ids, axis 0)). */
export const PackedRowGather: OpDef = {
  arity: 2, category: "composite", view: false,
  doc: "gather whole packed rows at i32 ids and decode them to f32",
  infer([t, ids], _p, ctx) {
    if (!isPacked(t!.dtype)) return ctx.fail("dtype-mismatch", `PackedRowGather needs a packed table, got ${dtypeName(t!.dtype)}`);
    if (ids!.dtype !== "i32") ctx.fail("dtype-mismatch", "ids must be i32");
    if (t!.shape.length < 2) ctx.fail("shape-mismatch", "the table needs rank >= 2");
    return { dtype: "f32", shape: [...ids!.shape, ...t!.shape.slice(1)] };
  },
  evaluate([t, ids], _p, out, ctx) {
    if (!isPacked(t!.dtype)) return ctx.fail("dtype-mismatch", "packed table expected");
    const rowElems = numel(t!.shape.slice(1));
    const rowBytes = storageBytes(t!.dtype, rowElems);
    const res = new Float64Array(numel(out.shape));
    const src = t!.data as Uint8Array;
    for (let j = 0; j < ids!.data.length; j++) {
      const r = ids!.data[j]!;
      if (r < 0 || r >= t!.shape[0]!) ctx.fail("index-out-of-range", `row ${r} at position ${j} is outside [0, ${t!.shape[0]})`);
      res.set(decodePacked(t!.dtype.packed, src.subarray(r * rowBytes, (r + 1) * rowBytes), rowElems), j * rowElems);
    }
    return res;
  },
};

/** Params of IndexedMatMul. */
export type IndexedMatMulParams = {
  /** Dtype the accumulator is rounded to before the epilogue. */
  readonly accDtype: "f32" | "f16" | "bf16";
  /** Epilogue over input 0 = accumulator [T, S, N] and inputs 1.. = the extra operands (e.g. gate weights); or null. */
  readonly epilogue: Region | null;
};

/** IndexedMatMul(x [T, K], w [E, N, K], ids i32 [T, S], ...extra): acc[t, s, n] = sum_k x[t, k] * w[ids[t, s], n, k]. */
export const IndexedMatMul: OpDef<IndexedMatMulParams> = {
  arity: { min: 3 }, category: "composite", view: false,
  doc: "routed contraction: every token row times its selected experts' [N, K] weights, float64 sums in increasing k, then the epilogue",
  infer([x, w, ids, ...extra], p, ctx) {
    requireFloat(ctx, "x", x!.dtype);
    requireFloat(ctx, "w", w!.dtype);
    if (ids!.dtype !== "i32") ctx.fail("dtype-mismatch", "expert ids must be i32");
    if (x!.shape.length !== 2 || w!.shape.length !== 3 || ids!.shape.length !== 2) ctx.fail("shape-mismatch", "IndexedMatMul needs x [T, K], w [E, N, K], ids [T, S]");
    const [t, k] = x!.shape as [number, number];
    const [, n, kw] = w!.shape as [number, number, number];
    if (kw !== k || ids!.shape[0] !== t) ctx.fail("shape-mismatch", `x [${t},${k}], w [.., ${n}, ${kw}] and ids [${ids!.shape.join(",")}] disagree`);
    if (!["f32", "f16", "bf16"].includes(p.accDtype)) ctx.fail("bad-param", "accDtype must be a float dtype");
    const acc = { dtype: p.accDtype, shape: [t, ids!.shape[1]!, n] };
    if (p.epilogue === null) return acc;
    return typeRegion(regionParam(ctx, p.epilogue, "epilogue"), [acc, ...extra], REGION_OPS, ctx);
  },
  evaluate([x, w, ids, ...extra], p, _out, ctx) {
    const [t, k] = x!.shape as [number, number];
    const [e, n] = w!.shape as [number, number, number];
    const s = ids!.shape[1]!;
    const acc = new Float64Array(t * s * n);
    for (let i = 0; i < t; i++) for (let j = 0; j < s; j++) {
      const ex = ids!.data[i * s + j]!;
      if (ex < 0 || ex >= e) ctx.fail("index-out-of-range", `expert id ${ex} at [${i},${j}] is outside [0, ${e})`);
      for (let c = 0; c < n; c++) {
        let sum = 0;
        for (let kk = 0; kk < k; kk++) sum += x!.data[i * k + kk]! * w!.data[(ex * n + c) * k + kk]!;
        acc[(i * s + j) * n + c] = sum;
      }
    }
    roundInPlace(p.accDtype, acc);
    if (p.epilogue === null) return acc;
    const accT: Tensor = { dtype: p.accDtype, shape: [t, s, n], data: acc };
    return evalRegion(p.epilogue, [accT, ...(extra as Tensor[])], REGION_OPS, ctx);
  },
};

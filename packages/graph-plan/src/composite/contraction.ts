// Contraction composites: ContractionEpilogue (MatMul with widened operands, an optional transposed B
// and a fused epilogue region) and PackedContraction (the same over packed weights decoded on read).

import { decodePacked, dtypeName, roundInPlace, isPacked, numel, type OpContext, type OpDef, type Tensor, type TensorData, type ValueType } from "@poot/graph-ir";
import { evalRegion, regionParam, typeRegion, type Region } from "../region.js";
import { REGION_OPS } from "./rope.js";
import { broadcastMap, mustBroadcast, requireFloat } from "./util.js";

/** Params of ContractionEpilogue / PackedContraction. */
export type ContractionParams = {
  /** B is stored [..., N, K] (HF linear layout) and read transposed. */
  readonly transposeB: boolean;
  /** Dtype the accumulator is rounded to before the epilogue reads it (the replaced MatMul's dtype). */
  readonly accDtype: "f32" | "f16" | "bf16";
  /** Epilogue over input 0 = the rounded accumulator and inputs 1.. = the extra operands; null for none. */
  readonly epilogue: Region | null;
  /** Schedule chosen by tiling (not part of the semantics). */
  readonly schedule?: { readonly [k: string]: number | string };
};

function contractionType(inputs: readonly ValueType[], p: ContractionParams, ctx: OpContext, packed: boolean): { acc: ValueType; out: ValueType } {
  const [a, b, ...extra] = inputs;
  if (a === undefined || b === undefined) return ctx.fail("bad-arity", "a contraction needs A and B");
  requireFloat(ctx, "A", a.dtype);
  if (packed ? !isPacked(b.dtype) : isPacked(b.dtype)) ctx.fail("dtype-mismatch", `B has dtype ${dtypeName(b.dtype)}; ${packed ? "PackedContraction needs packed weights" : "use PackedContraction for packed weights"}`);
  if (!packed) requireFloat(ctx, "B", b.dtype);
  if (typeof p.transposeB !== "boolean") ctx.fail("bad-param", "transposeB must be a boolean");
  if (!["f32", "f16", "bf16"].includes(p.accDtype)) ctx.fail("bad-param", "accDtype must be f32, f16 or bf16");
  if (packed && !p.transposeB) ctx.fail("bad-param", "packed weights are blocked along K: PackedContraction reads them transposed");
  if (a.shape.length < 2 || b.shape.length < 2) ctx.fail("shape-mismatch", "contraction operands need rank >= 2");
  const [m, k] = a.shape.slice(-2) as [number, number];
  const bs = b.shape.slice(-2) as [number, number];
  const [kb, n] = p.transposeB ? [bs[1], bs[0]] : bs;
  if (k !== kb) ctx.fail("shape-mismatch", `contraction depth differs: A has K=${k}, B has K=${kb}`);
  const batch = mustBroadcast(ctx, a.shape.slice(0, -2), b.shape.slice(0, -2), "batch dims");
  const acc: ValueType = { dtype: p.accDtype, shape: [...batch, m, n] };
  if (p.epilogue === null) {
    if (extra.length > 0) ctx.fail("bad-arity", "extra operands need an epilogue");
    return { acc, out: acc };
  }
  const ep = regionParam(ctx, p.epilogue, "epilogue");
  return { acc, out: typeRegion(ep, [acc, ...extra], REGION_OPS, ctx) };
}

function contract(inputs: readonly Tensor[], p: ContractionParams, acc: ValueType, ctx: OpContext, bData: ArrayLike<number>): TensorData {
  const [a, b, ...extra] = inputs as [Tensor, Tensor, ...Tensor[]];
  const [m, k] = a.shape.slice(-2) as [number, number];
  const n = acc.shape[acc.shape.length - 1]!;
  const batch = acc.shape.slice(0, -2);
  const nb = numel(batch);
  const ia = broadcastMap(batch, a.shape.slice(0, -2)), ib = broadcastMap(batch, b.shape.slice(0, -2));
  const ad = a.data;
  const out = new Float64Array(nb * m * n);
  for (let t = 0; t < nb; t++) {
    const aOff = (ia === null ? t : ia[t]!) * m * k, bOff = (ib === null ? t : ib[t]!) * k * n;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        // Each output sums its products in increasing k, exactly like the primitive MatMul.
        let s = 0;
        if (p.transposeB) for (let kk = 0; kk < k; kk++) s += ad[aOff + i * k + kk]! * bData[bOff + j * k + kk]!;
        else for (let kk = 0; kk < k; kk++) s += ad[aOff + i * k + kk]! * bData[bOff + kk * n + j]!;
        out[(t * m + i) * n + j] = s;
      }
    }
  }
  if (p.epilogue === null) return out;
  const accT: Tensor = { dtype: acc.dtype, shape: acc.shape, data: out };
  // The epilogue reads the accumulator as the replaced MatMul stored it (a narrow head rounds first).
  roundInPlace(p.accDtype, out);
  return evalRegion(p.epilogue, [accT, ...extra], REGION_OPS, ctx);
}

/** MatMul (A widened, B widened and optionally transposed) with the accumulator rounded to accDtype, then the epilogue. */
export const ContractionEpilogue: OpDef<ContractionParams> = {
  arity: { min: 2 }, category: "composite", view: false,
  doc: "epilogue(round_acc(A @ B or A @ B^T), ...extra): float64 sums in increasing k; operands widened exactly",
  infer: (inputs, p, ctx) => contractionType(inputs, p, ctx, false).out,
  evaluate(inputs, p, _out, ctx) {
    const acc = contractionType(inputs, p, ctx, false).acc;
    return contract(inputs, p, acc, ctx, inputs[1]!.data);
  },
};

/** ContractionEpilogue over packed B ([..., N, K] blocked along K), decoded to f32 on read. */
export const PackedContraction: OpDef<ContractionParams> = {
  arity: { min: 2 }, category: "composite", view: false,
  doc: "epilogue(round_acc(A @ decode(B)^T), ...extra): B packed [N, K], decoded to f32 values exactly as DecodePacked",
  infer: (inputs, p, ctx) => contractionType(inputs, p, ctx, true).out,
  evaluate(inputs, p, _out, ctx) {
    const acc = contractionType(inputs, p, ctx, true).acc;
    const b = inputs[1]!;
    if (!isPacked(b.dtype)) return ctx.fail("dtype-mismatch", "B must be packed");
    const w = decodePacked(b.dtype.packed, b.data as Uint8Array, numel(b.shape));
    // DecodePacked stores f32, so decoded weights are rounded to f32 before they are multiplied.
    for (let i = 0; i < w.length; i++) w[i] = Math.fround(w[i]!);
    return contract(inputs, p, acc, ctx, w);
  },
};

// Contraction composites: ContractionEpilogue (MatMul with widened operands, an optional transposed B,
// several B operands sharing A, and a fused epilogue region) and PackedContraction (packed B decoded on read).

import {
  decodePacked,
  dtypeName,
  roundInPlace,
  isPacked,
  numel,
  shapeEquals,
  type OpContext,
  type OpDef,
  type Tensor,
  type TensorData,
  type ValueType,
} from "@poot/graph-ir";
import type { HorizontalGroup } from "../passes/horizontal.js";
import { evalRegion, regionParam, typeRegion, type Region } from "../region.js";
import { REGION_OPS } from "./rope.js";
import { broadcastMap, mustBroadcast, requireFloat } from "./util.js";

/** Params of ContractionEpilogue / PackedContraction. */
export type ContractionParams = {
  /** B is stored [..., N, K] (HF linear layout) and read transposed. */
  readonly transposeB: boolean;
  /** Dtype the accumulators are rounded to before the epilogue reads them (the replaced MatMuls' dtype). */
  readonly accDtype: "f32" | "f16" | "bf16";
  /**
   * How many B operands share A (horizontal fusion, e.g. gate and up); default 1. Inputs are
   * [A, B_0 .. B_{h-1}, ...extra]; the epilogue reads accumulators 0..h-1, then the extra operands.
   */
  readonly heads?: number;
  /** Epilogue over the rounded accumulators and the extra operands; null for none (then heads is 1). */
  readonly epilogue: Region | null;
  /** Schedule chosen by tiling (not part of the semantics). */
  readonly schedule?: { readonly [k: string]: number | string };
  /** Membership in a horizontal group (option horizontalFusion "grouped"; schedule only, not part of the semantics). */
  readonly group?: HorizontalGroup;
};

const headsOf = (p: ContractionParams): number => p.heads ?? 1;

function contractionType(
  inputs: readonly ValueType[],
  p: ContractionParams,
  ctx: OpContext,
  packed: boolean,
): { acc: ValueType; out: ValueType } {
  const h = headsOf(p);
  if (!Number.isInteger(h) || h < 1) ctx.fail("bad-param", "heads must be a positive integer");
  const a = inputs[0],
    bs = inputs.slice(1, 1 + h),
    extra = inputs.slice(1 + h);
  if (a === undefined || bs.length !== h) return ctx.fail("bad-arity", `a contraction needs A and ${h} B operand(s)`);
  requireFloat(ctx, "A", a.dtype);
  const b = bs[0]!;
  for (const bi of bs) {
    if (packed ? !isPacked(bi.dtype) : isPacked(bi.dtype))
      ctx.fail(
        "dtype-mismatch",
        `B has dtype ${dtypeName(bi.dtype)}; ${packed ? "PackedContraction needs packed weights" : "use PackedContraction for packed weights"}`,
      );
    if (!packed) requireFloat(ctx, "B", bi.dtype);
    if (!shapeEquals(bi.shape, b.shape)) ctx.fail("shape-mismatch", "B operands sharing A must have one shape");
  }
  if (typeof p.transposeB !== "boolean") ctx.fail("bad-param", "transposeB must be a boolean");
  if (!["f32", "f16", "bf16"].includes(p.accDtype)) ctx.fail("bad-param", "accDtype must be f32, f16 or bf16");
  if (packed && !p.transposeB)
    ctx.fail("bad-param", "packed weights are blocked along K: PackedContraction reads them transposed");
  if (a.shape.length < 2 || b.shape.length < 2) ctx.fail("shape-mismatch", "contraction operands need rank >= 2");
  const [m, k] = a.shape.slice(-2) as [number, number];
  const last = b.shape.slice(-2) as [number, number];
  const [kb, n] = p.transposeB ? [last[1], last[0]] : last;
  if (k !== kb) ctx.fail("shape-mismatch", `contraction depth differs: A has K=${k}, B has K=${kb}`);
  const batch = mustBroadcast(ctx, a.shape.slice(0, -2), b.shape.slice(0, -2), "batch dims");
  const acc: ValueType = { dtype: p.accDtype, shape: [...batch, m, n] };
  if (p.epilogue === null) {
    if (extra.length > 0 || h !== 1) ctx.fail("bad-arity", "extra operands and shared-A heads need an epilogue");
    return { acc, out: acc };
  }
  const ep = regionParam(ctx, p.epilogue, "epilogue");
  return { acc, out: typeRegion(ep, [...bs.map(() => acc), ...extra], REGION_OPS, ctx) };
}

/** acc = A @ B (or B^T) in float64, summing each output in increasing k exactly like the primitive MatMul. */
function accumulate(a: Tensor, b: Tensor, bData: ArrayLike<number>, transposeB: boolean, acc: ValueType): Float64Array {
  const [m, k] = a.shape.slice(-2) as [number, number];
  const n = acc.shape[acc.shape.length - 1]!;
  const batch = acc.shape.slice(0, -2);
  const nb = numel(batch);
  const ia = broadcastMap(batch, a.shape.slice(0, -2)),
    ib = broadcastMap(batch, b.shape.slice(0, -2));
  const ad = a.data;
  const out = new Float64Array(nb * m * n);
  for (let t = 0; t < nb; t++) {
    const aOff = (ia === null ? t : ia[t]!) * m * k,
      bOff = (ib === null ? t : ib[t]!) * k * n;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        if (transposeB) for (let kk = 0; kk < k; kk++) s += ad[aOff + i * k + kk]! * bData[bOff + j * k + kk]!;
        else for (let kk = 0; kk < k; kk++) s += ad[aOff + i * k + kk]! * bData[bOff + kk * n + j]!;
        out[(t * m + i) * n + j] = s;
      }
    }
  }
  return out;
}

function contract(
  inputs: readonly Tensor[],
  p: ContractionParams,
  acc: ValueType,
  ctx: OpContext,
  bData: (b: Tensor) => ArrayLike<number>,
): TensorData {
  const h = headsOf(p);
  const a = inputs[0]!,
    bs = inputs.slice(1, 1 + h),
    extra = inputs.slice(1 + h);
  const accs = bs.map((b) => accumulate(a, b, bData(b), p.transposeB, acc));
  if (p.epilogue === null) return accs[0]!;
  // The epilogue reads each accumulator as the replaced MatMul stored it (a narrow head rounds first).
  for (const x of accs) roundInPlace(p.accDtype, x);
  return evalRegion(
    p.epilogue,
    [...accs.map((data): Tensor => ({ dtype: acc.dtype, shape: acc.shape, data })), ...extra],
    REGION_OPS,
    ctx,
  );
}

/** MatMul (A widened, each B widened and optionally transposed), accumulators rounded to accDtype, then the epilogue. */
export const ContractionEpilogue: OpDef<ContractionParams> = {
  arity: { min: 2 },
  category: "composite",
  view: false,
  doc: "epilogue(round_acc(A @ B_i or A @ B_i^T) for each head, ...extra): float64 sums in increasing k; operands widened exactly",
  infer: (inputs, p, ctx) => contractionType(inputs, p, ctx, false).out,
  evaluate(inputs, p, _out, ctx) {
    const acc = contractionType(inputs, p, ctx, false).acc;
    return contract(inputs, p, acc, ctx, (b) => b.data);
  },
};

/** ContractionEpilogue over packed B ([..., N, K] blocked along K), decoded to f32 on read. */
export const PackedContraction: OpDef<ContractionParams> = {
  arity: { min: 2 },
  category: "composite",
  view: false,
  doc: "epilogue(round_acc(A @ decode(B_i)^T), ...extra): B packed [N, K], decoded to f32 values exactly as DecodePacked",
  infer: (inputs, p, ctx) => contractionType(inputs, p, ctx, true).out,
  evaluate(inputs, p, _out, ctx) {
    const acc = contractionType(inputs, p, ctx, true).acc;
    return contract(inputs, p, acc, ctx, (b) => {
      if (!isPacked(b.dtype)) return ctx.fail("dtype-mismatch", "B must be packed");
      const w = decodePacked(b.dtype.packed, b.data as Uint8Array, numel(b.shape));
      // DecodePacked stores f32, so decoded weights are rounded to f32 before they are multiplied.
      for (let i = 0; i < w.length; i++) w[i] = Math.fround(w[i]!);
      return w;
    });
  },
};

// MatMul with batch broadcasting, Iota, and DecodePacked (packed weights -> f32).
// MatMul accumulates each output in float64 over k in increasing order.

import { dtypeName, isPacked, isScalarDType, type ScalarDType } from "../dtype.js";
import { decodePacked } from "../packed.js";
import { broadcastIndex, broadcastShapes, isValidShape, numel, shapeString } from "../shape.js";
import { allocData } from "../tensor.js";
import { dtypeEquals } from "../dtype.js";
import { normAxis, requireDType, type OpDef } from "./opdef.js";

/** MatMul: [..., M, K] x [..., K, N] -> [..., M, N], batch dims broadcast, float operands of one dtype. */
export const MatMul: OpDef = {
  arity: 2,
  category: "linalg",
  view: false,
  doc: "[...,M,K] @ [...,K,N] -> [...,M,N] with numpy-broadcast batch dims; float64 accumulation",
  infer([a, b], _p, ctx) {
    requireDType(ctx, "lhs", a!.dtype, ["f32", "f16", "bf16"]);
    if (!dtypeEquals(a!.dtype, b!.dtype))
      ctx.fail("dtype-mismatch", `MatMul operands ${dtypeName(a!.dtype)} and ${dtypeName(b!.dtype)} differ`);
    if (a!.shape.length < 2 || b!.shape.length < 2)
      ctx.fail(
        "shape-mismatch",
        `MatMul needs rank >= 2 operands, got ${shapeString(a!.shape)} and ${shapeString(b!.shape)}`,
      );
    const [m, k] = a!.shape.slice(-2) as [number, number];
    const [k2, n] = b!.shape.slice(-2) as [number, number];
    if (k !== k2)
      ctx.fail("shape-mismatch", `MatMul contraction dims differ: ${shapeString(a!.shape)} @ ${shapeString(b!.shape)}`);
    const batch = broadcastShapes(a!.shape.slice(0, -2), b!.shape.slice(0, -2));
    if (batch === null)
      return ctx.fail(
        "shape-mismatch",
        `MatMul batch dims do not broadcast: ${shapeString(a!.shape)} @ ${shapeString(b!.shape)}`,
      );
    return { dtype: a!.dtype, shape: [...batch, m, n] };
  },
  evaluate([a, b], _p, out) {
    const [m, k] = a!.shape.slice(-2) as [number, number];
    const n = b!.shape[b!.shape.length - 1]!;
    const batch = out.shape.slice(0, -2);
    const nb = numel(batch);
    const ia = broadcastIndex(batch, a!.shape.slice(0, -2)),
      ib = broadcastIndex(batch, b!.shape.slice(0, -2));
    const ad = a!.data as Float64Array,
      bd = b!.data as Float64Array;
    const data = new Float64Array(nb * m * n);
    for (let t = 0; t < nb; t++) {
      const aOff = (ia === null ? t : ia[t]!) * m * k;
      const bOff = (ib === null ? t : ib[t]!) * k * n;
      const oOff = t * m * n;
      for (let i = 0; i < m; i++) {
        const row = oOff + i * n;
        // i-k-j order keeps every output's sum in increasing k while streaming rows of b.
        for (let kk = 0; kk < k; kk++) {
          const av = ad[aOff + i * k + kk]!;
          const bRow = bOff + kk * n;
          for (let j = 0; j < n; j++) data[row + j] = data[row + j]! + av * bd[bRow + j]!;
        }
      }
    }
    return data;
  },
};

/** Params of Iota. */
export type IotaParams = { readonly shape: readonly number[]; readonly axis: number; readonly dtype: ScalarDType };

/** Iota[shape, axis, dtype]: out[idx] = idx[axis]. */
export const Iota: OpDef<IotaParams> = {
  arity: 0,
  category: "source",
  view: false,
  doc: "out[idx] = idx[axis], cast to dtype",
  infer(_i, p, ctx) {
    if (!isValidShape(p.shape)) ctx.fail("bad-param", `Iota.shape ${JSON.stringify(p.shape)} is not a shape`);
    if (!isScalarDType(p.dtype) || p.dtype === "bool")
      ctx.fail("bad-param", `Iota.dtype ${JSON.stringify(p.dtype)} must be a numeric scalar dtype`);
    normAxis(ctx, p.axis, p.shape.length);
    return { dtype: p.dtype, shape: [...p.shape] };
  },
  evaluate(_i, p, out) {
    const axis = p.axis < 0 ? p.axis + p.shape.length : p.axis;
    const inner = numel(p.shape.slice(axis + 1));
    const dim = p.shape[axis]!;
    const data = allocData(out.dtype, numel(p.shape));
    for (let k = 0; k < data.length; k++) data[k] = Math.floor(k / inner) % dim;
    return data;
  },
};

/** DecodePacked: a packed tensor -> the f32 tensor of the same shape, via its format's decode recipe. */
export const DecodePacked: OpDef = {
  arity: 1,
  category: "packed",
  view: false,
  doc: "decode packed storage to f32 blocks along the last axis",
  infer([x], _p, ctx) {
    const d = x!.dtype;
    if (!isPacked(d)) return ctx.fail("dtype-mismatch", `DecodePacked needs a packed operand, got ${dtypeName(d)}`);
    const last = x!.shape[x!.shape.length - 1];
    if (last === undefined || last % d.packed.blockSize !== 0)
      ctx.fail(
        "shape-mismatch",
        `last dim of ${shapeString(x!.shape)} is not a multiple of block size ${d.packed.blockSize}`,
      );
    return { dtype: "f32", shape: x!.shape };
  },
  evaluate([x]) {
    const d = x!.dtype;
    if (!isPacked(d)) throw new TypeError("unreachable: typed as packed");
    return decodePacked(d.packed, x!.data as Uint8Array, numel(x!.shape));
  },
};

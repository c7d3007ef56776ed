// Movement ops: Reshape, Slice, Broadcast, Transpose, Concat, Gather, DynamicSlice, DynamicUpdateSlice.
// They copy elements without arithmetic; packed tensors move only as whole rows (Reshape, Gather axis 0).

import { dtypeEquals, dtypeName, isPacked, storageBytes } from "../dtype.js";
import type { ValueType } from "../graph.js";
import { broadcastIndex, broadcastShapes, isValidShape, numel, shapeEquals, shapeString, stridesOf } from "../shape.js";
import { allocData, type Tensor, type TensorData } from "../tensor.js";
import { intList, normAxis, requireDType, type OpContext, type OpDef } from "./opdef.js";
import { offsets } from "./reduce.js";

function noPacked(ctx: OpContext, t: ValueType): void {
  if (isPacked(t.dtype)) ctx.fail("dtype-mismatch", `${ctx.op} cannot move packed ${dtypeName(t.dtype)} data`);
}

/** Copies `src` elements at `srcOff` (one per output element) into a fresh array. */
function take(dtype: ValueType["dtype"], src: TensorData, srcOff: Int32Array): TensorData {
  const out = allocData(dtype, srcOff.length);
  for (let k = 0; k < srcOff.length; k++) out[k] = src[srcOff[k]!]!;
  return out;
}

/** Params of Reshape. */
export type ReshapeParams = { readonly shape: readonly number[] };
/** Reshape[shape]: same elements in row-major order; packed tensors must keep their last (blocked) dim. */
export const Reshape: OpDef<ReshapeParams> = {
  arity: 1,
  category: "movement",
  view: true,
  doc: "same elements, new shape (row-major); always a view",
  infer([x], p, ctx) {
    if (!isValidShape(p.shape)) ctx.fail("bad-param", `Reshape.shape ${JSON.stringify(p.shape)} is not a shape`);
    if (numel(p.shape) !== numel(x!.shape))
      ctx.fail("shape-mismatch", `cannot reshape ${shapeString(x!.shape)} to ${shapeString(p.shape)}`);
    if (isPacked(x!.dtype) && p.shape[p.shape.length - 1] !== x!.shape[x!.shape.length - 1]) {
      ctx.fail("shape-mismatch", "reshaping a packed tensor must keep its last (blocked) dim");
    }
    return { dtype: x!.dtype, shape: [...p.shape] };
  },
  evaluate([x]) {
    return x!.data;
  },
};

/** Params of Slice: per-axis start (inclusive), end (exclusive), step (>= 1). */
export type SliceParams = {
  readonly start: readonly number[];
  readonly end: readonly number[];
  readonly step: readonly number[];
};
/** Slice[start, end, step]: out dim = ceil((end - start) / step). */
export const Slice: OpDef<SliceParams> = {
  arity: 1,
  category: "movement",
  view: true,
  doc: "strided window start:end:step per axis (0 <= start <= end <= dim, step >= 1)",
  infer([x], p, ctx) {
    noPacked(ctx, x!);
    const r = x!.shape.length;
    const st = intList(ctx, "start", p.start),
      en = intList(ctx, "end", p.end),
      sp = intList(ctx, "step", p.step);
    if (st.length !== r || en.length !== r || sp.length !== r)
      ctx.fail("bad-param", `Slice needs start/end/step of length ${r}`);
    const shape = x!.shape.map((d, i) => {
      const s = st[i]!,
        e = en[i]!,
        k = sp[i]!;
      if (s < 0 || e > d || s > e || k < 1)
        ctx.fail("bad-param", `Slice axis ${i}: ${s}:${e}:${k} is invalid for dim ${d}`);
      return Math.ceil((e - s) / k);
    });
    return { dtype: x!.dtype, shape };
  },
  evaluate([x], p, out) {
    const str = stridesOf(x!.shape);
    const base = p.start.reduce((acc, s, i) => acc + s * str[i]!, 0);
    const off = offsets(
      out.shape,
      str.map((s, i) => s * p.step[i]!),
    );
    for (let k = 0; k < off.length; k++) off[k] = off[k]! + base;
    return take(out.dtype, x!.data, off);
  },
};

/** Params of Broadcast. */
export type BroadcastParams = { readonly shape: readonly number[] };
/** Broadcast[shape]: numpy broadcasting of the input to exactly `shape`. */
export const Broadcast: OpDef<BroadcastParams> = {
  arity: 1,
  category: "movement",
  view: true,
  doc: "numpy-broadcast the input to `shape` (a stride-0 view)",
  infer([x], p, ctx) {
    noPacked(ctx, x!);
    if (!isValidShape(p.shape)) ctx.fail("bad-param", `Broadcast.shape ${JSON.stringify(p.shape)} is not a shape`);
    const b = broadcastShapes(x!.shape, p.shape);
    if (b === null || !shapeEquals(b, p.shape))
      ctx.fail("shape-mismatch", `cannot broadcast ${shapeString(x!.shape)} to ${shapeString(p.shape)}`);
    return { dtype: x!.dtype, shape: [...p.shape] };
  },
  evaluate([x], _p, out) {
    const map = broadcastIndex(out.shape, x!.shape);
    return map === null ? x!.data : take(out.dtype, x!.data, map);
  },
};

/** Params of Transpose. */
export type TransposeParams = { readonly perm: readonly number[] };
/** Transpose[perm]: out.shape[i] = x.shape[perm[i]]. */
export const Transpose: OpDef<TransposeParams> = {
  arity: 1,
  category: "movement",
  view: true,
  doc: "permute axes: out[i...] = x[perm-indexed], out.shape[i] = x.shape[perm[i]]",
  infer([x], p, ctx) {
    noPacked(ctx, x!);
    const r = x!.shape.length;
    const perm = intList(ctx, "perm", p.perm);
    if (perm.length !== r || new Set(perm).size !== r || perm.some((a) => a < 0 || a >= r))
      ctx.fail("bad-axis", `perm ${JSON.stringify(perm)} is not a permutation of rank ${r}`);
    return { dtype: x!.dtype, shape: perm.map((a) => x!.shape[a]!) };
  },
  evaluate([x], p, out) {
    const str = stridesOf(x!.shape);
    return take(
      out.dtype,
      x!.data,
      offsets(
        out.shape,
        p.perm.map((a) => str[a]!),
      ),
    );
  },
};

/** Params of Concat. */
export type ConcatParams = { readonly axis: number };
/** Concat[axis]: inputs of one dtype, equal shapes except along `axis`. */
export const Concat: OpDef<ConcatParams> = {
  arity: { min: 1 },
  category: "movement",
  view: false,
  doc: "join inputs along `axis`",
  infer(inputs, p, ctx) {
    const first = inputs[0]!;
    noPacked(ctx, first);
    const axis = normAxis(ctx, p.axis, first.shape.length);
    let total = 0;
    for (const t of inputs) {
      if (!dtypeEquals(t.dtype, first.dtype))
        ctx.fail("dtype-mismatch", `Concat inputs differ in dtype: ${dtypeName(t.dtype)} vs ${dtypeName(first.dtype)}`);
      if (t.shape.length !== first.shape.length || t.shape.some((d, i) => i !== axis && d !== first.shape[i])) {
        ctx.fail(
          "shape-mismatch",
          `Concat inputs ${inputs.map((x) => shapeString(x.shape)).join(", ")} differ off axis ${axis}`,
        );
      }
      total += t.shape[axis]!;
    }
    const shape = [...first.shape];
    shape[axis] = total;
    return { dtype: first.dtype, shape };
  },
  evaluate(inputs, p, out) {
    const axis = p.axis < 0 ? p.axis + out.shape.length : p.axis;
    const outer = numel(out.shape.slice(0, axis));
    const inner = numel(out.shape.slice(axis + 1));
    const data = allocData(out.dtype, numel(out.shape));
    let col = 0;
    const rowLen = out.shape[axis]! * inner;
    for (const t of inputs) {
      const chunk = t.shape[axis]! * inner;
      for (let o = 0; o < outer; o++) data.set(t.data.subarray(o * chunk, (o + 1) * chunk) as never, o * rowLen + col);
      col += chunk;
    }
    return data;
  },
};

/** Params of Gather. */
export type GatherParams = { readonly axis: number };
/** `Gather[axis](x, idx: i32)`: `out.shape = x.shape[:axis] ++ idx.shape ++ x.shape[axis+1:]`. */
export const Gather: OpDef<GatherParams> = {
  arity: 2,
  category: "movement",
  view: false,
  doc: "index x along `axis` with i32 indices; packed x gathers whole rows along axis 0",
  infer([x, idx], p, ctx) {
    requireDType(ctx, "indices", idx!.dtype, ["i32"]);
    const axis = normAxis(ctx, p.axis, x!.shape.length);
    if (isPacked(x!.dtype) && (axis !== 0 || x!.shape.length < 2))
      ctx.fail("bad-axis", "packed tensors gather whole rows: axis 0 of a rank >= 2 tensor");
    return { dtype: x!.dtype, shape: [...x!.shape.slice(0, axis), ...idx!.shape, ...x!.shape.slice(axis + 1)] };
  },
  evaluate([x, idx], p, out, ctx) {
    const axis = p.axis < 0 ? p.axis + x!.shape.length : p.axis;
    const dim = x!.shape[axis]!;
    const outer = numel(x!.shape.slice(0, axis));
    // Inner chunk in storage units: bytes for packed rows, elements otherwise.
    const innerElems = numel(x!.shape.slice(axis + 1));
    const inner = isPacked(x!.dtype) ? storageBytes(x!.dtype, innerElems) : innerElems;
    const ids = idx!.data;
    const data = allocData(out.dtype, numel(out.shape));
    const src = x!.data;
    for (let o = 0; o < outer; o++) {
      for (let j = 0; j < ids.length; j++) {
        const r = ids[j]!;
        if (r < 0 || r >= dim)
          ctx.fail("index-out-of-range", `Gather index ${r} at position ${j} is outside [0, ${dim})`);
        const from = (o * dim + r) * inner;
        data.set(src.subarray(from, from + inner) as never, (o * ids.length + j) * inner);
      }
    }
    return data;
  },
};

/** Params of DynamicSlice: the static window size per axis. */
export type DynamicSliceParams = { readonly sizes: readonly number[] };

function dynStarts(ctx: OpContext, types: readonly ValueType[], rank: number): void {
  if (types.length !== rank) ctx.fail("bad-arity", `expected ${rank} start indices, got ${types.length}`);
  for (const t of types) {
    requireDType(ctx, "start index", t.dtype, ["i32"]);
    if (t.shape.length !== 0) ctx.fail("shape-mismatch", `start indices must be scalars, got ${shapeString(t.shape)}`);
  }
}

/** Clamped starts (XLA semantics): start = clamp(s, 0, dim - size). */
function clampStarts(starts: readonly Tensor[], dims: readonly number[], sizes: readonly number[]): number[] {
  return starts.map((s, i) => Math.max(0, Math.min(dims[i]! - sizes[i]!, s.data[0]!)));
}

/** `DynamicSlice[sizes](x, ...starts: i32[])`: a window at runtime starts, clamped into range. */
export const DynamicSlice: OpDef<DynamicSliceParams> = {
  arity: { min: 1 },
  category: "movement",
  view: false,
  doc: "window of `sizes` at runtime i32 starts, each clamped to [0, dim - size]",
  infer([x, ...starts], p, ctx) {
    noPacked(ctx, x!);
    const sizes = intList(ctx, "sizes", p.sizes);
    if (sizes.length !== x!.shape.length || sizes.some((s, i) => s < 0 || s > x!.shape[i]!))
      ctx.fail("bad-param", `sizes ${JSON.stringify(sizes)} do not fit ${shapeString(x!.shape)}`);
    dynStarts(ctx, starts, x!.shape.length);
    return { dtype: x!.dtype, shape: [...sizes] };
  },
  evaluate([x, ...starts], p, out) {
    const str = stridesOf(x!.shape);
    const s = clampStarts(starts, x!.shape, p.sizes);
    const base = s.reduce((acc, v, i) => acc + v * str[i]!, 0);
    const off = offsets(out.shape, str);
    for (let k = 0; k < off.length; k++) off[k] = off[k]! + base;
    return take(out.dtype, x!.data, off);
  },
};

/** DynamicUpdateSlice(x, update, ...starts: i32[]): x with `update` written at clamped runtime starts. */
export const DynamicUpdateSlice: OpDef = {
  arity: { min: 2 },
  category: "movement",
  view: false,
  doc: "copy of x with `update` written at runtime i32 starts, clamped to [0, dim - size]",
  infer([x, upd, ...starts], _p, ctx) {
    noPacked(ctx, x!);
    if (!dtypeEquals(x!.dtype, upd!.dtype))
      ctx.fail("dtype-mismatch", `update dtype ${dtypeName(upd!.dtype)} differs from ${dtypeName(x!.dtype)}`);
    if (upd!.shape.length !== x!.shape.length || upd!.shape.some((d, i) => d > x!.shape[i]!))
      ctx.fail("shape-mismatch", `update ${shapeString(upd!.shape)} does not fit in ${shapeString(x!.shape)}`);
    dynStarts(ctx, starts, x!.shape.length);
    return { dtype: x!.dtype, shape: x!.shape };
  },
  evaluate([x, upd, ...starts], _p, out) {
    const str = stridesOf(x!.shape);
    const s = clampStarts(starts, x!.shape, upd!.shape);
    const base = s.reduce((acc, v, i) => acc + v * str[i]!, 0);
    const off = offsets(upd!.shape, str);
    const data = allocData(out.dtype, x!.data.length);
    data.set(x!.data as never);
    const u = upd!.data;
    for (let k = 0; k < off.length; k++) data[base + off[k]!] = u[k]!;
    return data;
  },
};

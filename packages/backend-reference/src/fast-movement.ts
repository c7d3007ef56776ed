// Transpose and Broadcast for the eval executor's folded schedule: the reference's data movement without
// materializing an index array per element. They copy values unchanged, so results are identical.
import {
  allocData,
  numel,
  PRIMITIVE_OPS,
  stridesOf,
  type BroadcastParams,
  type OpDef,
  type Tensor,
  type TensorData,
  type TransposeParams,
  type ValueType,
} from "@poot/graph-ir";

/** Copies the strided view (`strides` per output axis, 0 = repeat) of `src` into a new array of `out`. */
function stridedCopy(out: ValueType, src: TensorData, strides: readonly number[]): TensorData {
  const shape = out.shape,
    r = shape.length,
    n = numel(shape);
  const dst = allocData(out.dtype, n);
  if (n === 0) return dst;
  if (r === 0) {
    dst[0] = src[0]!;
    return dst;
  }
  const last = shape[r - 1]!,
    sl = strides[r - 1]!;
  const idx = new Array<number>(r - 1).fill(0);
  let base = 0;
  for (let o = 0; o < n; o += last) {
    // The innermost axis is one tight loop; outer axes advance like an odometer.
    for (let j = 0; j < last; j++) dst[o + j] = src[base + j * sl]!;
    for (let d = r - 2; d >= 0; d--) {
      idx[d]!++;
      base += strides[d]!;
      if (idx[d]! < shape[d]!) break;
      base -= strides[d]! * idx[d]!;
      idx[d] = 0;
    }
  }
  return dst;
}

/** Transpose with the reference's typing rule and semantics. */
export const FastTranspose: OpDef<TransposeParams> = {
  ...(PRIMITIVE_OPS.Transpose as OpDef<TransposeParams>),
  evaluate([x], p, out) {
    const str = stridesOf((x as Tensor).shape);
    return stridedCopy(
      out,
      (x as Tensor).data,
      p.perm.map((a) => str[a]!),
    );
  },
};

/** Broadcast with the reference's typing rule and semantics (a same-shape broadcast returns its input). */
export const FastBroadcast: OpDef<BroadcastParams> = {
  ...(PRIMITIVE_OPS.Broadcast as OpDef<BroadcastParams>),
  evaluate([x], _p, out) {
    const t = x as Tensor;
    if (t.shape.length === out.shape.length && t.shape.every((d, i) => d === out.shape[i])) return t.data;
    const inStr = stridesOf(t.shape);
    const lead = out.shape.length - t.shape.length;
    // Size-1 and missing input axes repeat (stride 0).
    const strides = out.shape.map((_, i) => (i < lead || t.shape[i - lead] === 1 ? 0 : inStr[i - lead]!));
    return stridedCopy(out, t.data, strides);
  },
};

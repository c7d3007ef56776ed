// Static shapes: element counts, row-major strides and numpy broadcasting.
// All shapes are known at trace time; dims are non-negative integers.

/** A static shape; `[]` is a scalar. */
export type Shape = readonly number[];

/** Number of elements of a shape (1 for a scalar). */
export function numel(shape: Shape): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Row-major strides in elements. */
export function stridesOf(shape: Shape): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i]!;
  }
  return s;
}

/** Shape equality. */
export function shapeEquals(a: Shape, b: Shape): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/** Numpy broadcasting of two shapes; `null` when they are incompatible. */
export function broadcastShapes(a: Shape, b: Shape): number[] | null {
  const n = Math.max(a.length, b.length);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const da = a[a.length - n + i] ?? 1;
    const db = b[b.length - n + i] ?? 1;
    if (da !== db && da !== 1 && db !== 1) return null;
    out[i] = da === 1 ? db : da;
  }
  return out;
}

/** True when every dim is a non-negative integer. */
export function isValidShape(shape: unknown): shape is Shape {
  return Array.isArray(shape) && shape.every((d) => Number.isInteger(d) && d >= 0);
}

/** Printable `[2,3]`. */
export function shapeString(shape: Shape): string {
  return `[${shape.join(",")}]`;
}

/**
 * For each flat index of `outShape`, the flat index into a tensor of shape `inShape` broadcast to it;
 * `null` when no mapping is needed (same shape).
 */
export function broadcastIndex(outShape: Shape, inShape: Shape): Int32Array | null {
  if (shapeEquals(outShape, inShape)) return null;
  const n = numel(outShape);
  const map = new Int32Array(n);
  const r = outShape.length;
  const inStr = stridesOf(inShape);
  // Effective strides: 0 along broadcast (size-1 or missing) dims.
  const eff = new Array<number>(r).fill(0);
  for (let i = 0; i < inShape.length; i++) {
    const o = r - inShape.length + i;
    eff[o] = inShape[i] === 1 ? 0 : inStr[i]!;
  }
  const idx = new Array<number>(r).fill(0);
  let src = 0;
  for (let k = 0; k < n; k++) {
    map[k] = src;
    // Odometer increment over the output index, updating the source offset incrementally.
    for (let d = r - 1; d >= 0; d--) {
      idx[d]!++;
      src += eff[d]!;
      if (idx[d]! < outShape[d]!) break;
      src -= eff[d]! * idx[d]!;
      idx[d] = 0;
    }
  }
  return map;
}

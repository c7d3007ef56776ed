// MatMul for the eval executor's folded schedule: the reference's exact arithmetic (float64 sums over k in
// increasing order, one product added at a time) with k blocked by four so each output is loaded and stored
// a quarter as often. Bit-identical to graph-ir's MatMul; checked by the conformance suite at tolerance 0.
import { PRIMITIVE_OPS, type OpDef, type Tensor } from "@poot/graph-ir";

/** Offsets of each output batch index into an operand's batch dims (numpy broadcasting, size-1 dims repeat). */
function batchOffsets(outBatch: readonly number[], batch: readonly number[], matrix: number): Int32Array {
  const n = outBatch.reduce((a, d) => a * d, 1);
  const out = new Int32Array(n);
  const lead = outBatch.length - batch.length;
  for (let t = 0; t < n; t++) {
    let rem = t,
      off = 0,
      stride = matrix;
    for (let d = outBatch.length - 1; d >= 0; d--) {
      const i = rem % outBatch[d]!;
      rem = Math.floor(rem / outBatch[d]!);
      const bd = d - lead;
      if (bd >= 0) {
        const size = batch[bd]!;
        if (size !== 1) off += i * stride;
        stride *= size;
      }
    }
    out[t] = off;
  }
  return out;
}

/** MatMul with the reference's typing rule and bit-identical, faster reference semantics. */
export const FastMatMul: OpDef = {
  ...PRIMITIVE_OPS.MatMul!,
  evaluate(inputs: readonly Tensor[], _p, out) {
    const [a, b] = inputs as [Tensor, Tensor];
    const [m, k] = a.shape.slice(-2) as [number, number];
    const n = b.shape[b.shape.length - 1]!;
    const outBatch = out.shape.slice(0, -2);
    const ia = batchOffsets(outBatch, a.shape.slice(0, -2), m * k),
      ib = batchOffsets(outBatch, b.shape.slice(0, -2), k * n);
    const ad = a.data as Float64Array,
      bd = b.data as Float64Array;
    const data = new Float64Array(ia.length * m * n);
    for (let t = 0; t < ia.length; t++) {
      const aOff = ia[t]!,
        bOff = ib[t]!,
        oOff = t * m * n;
      for (let i = 0; i < m; i++) {
        const row = oOff + i * n,
          arow = aOff + i * k;
        let kk = 0;
        for (; kk + 4 <= k; kk += 4) {
          const a0 = ad[arow + kk]!,
            a1 = ad[arow + kk + 1]!,
            a2 = ad[arow + kk + 2]!,
            a3 = ad[arow + kk + 3]!;
          const b0 = bOff + kk * n,
            b1 = b0 + n,
            b2 = b1 + n,
            b3 = b2 + n;
          for (let j = 0; j < n; j++) {
            // Four separate additions in k order: the same rounding sequence as the reference loop.
            let acc = data[row + j]!;
            acc += a0 * bd[b0 + j]!;
            acc += a1 * bd[b1 + j]!;
            acc += a2 * bd[b2 + j]!;
            acc += a3 * bd[b3 + j]!;
            data[row + j] = acc;
          }
        }
        for (; kk < k; kk++) {
          const av = ad[arow + kk]!,
            br = bOff + kk * n;
          for (let j = 0; j < n; j++) data[row + j] = data[row + j]! + av * bd[br + j]!;
        }
      }
    }
    return data;
  },
};

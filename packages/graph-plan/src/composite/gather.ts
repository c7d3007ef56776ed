// Index-driven composites: PackedRowGather (whole packed rows gathered and decoded in one pass). IndexedMatMul
// (routed experts) lives in indexed.ts.

import { decodePacked, dtypeName, isPacked, numel, storageBytes, type OpDef } from "@poot/graph-ir";

/** PackedRowGather(table packed [R, ...], ids i32) -> f32 rows, equal to DecodePacked(Gather(table, ids, axis 0)). */
export const PackedRowGather: OpDef = {
  arity: 2,
  category: "composite",
  view: false,
  doc: "gather whole packed rows at i32 ids and decode them to f32",
  infer([t, ids], _p, ctx) {
    if (!isPacked(t!.dtype))
      return ctx.fail("dtype-mismatch", `PackedRowGather needs a packed table, got ${dtypeName(t!.dtype)}`);
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
      if (r < 0 || r >= t!.shape[0]!)
        ctx.fail("index-out-of-range", `row ${r} at position ${j} is outside [0, ${t!.shape[0]})`);
      res.set(decodePacked(t!.dtype.packed, src.subarray(r * rowBytes, (r + 1) * rowBytes), rowElems), j * rowElems);
    }
    return res;
  },
};

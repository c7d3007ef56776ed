// Two-stage greedy argmax for large vocabularies: ArgMaxChunk finds each chunk's first maximal index,
// ArgMaxCombine picks among the chunk winners. Together they equal Reduce argmax exactly (NaN included).

import { intParam } from "./util.js";
import type { OpDef, TensorData } from "@poot/graph-ir";

/** Params of ArgMaxChunk. */
export type ArgMaxChunkParams = { readonly chunk: number };

// numpy.argmax order: a NaN beats everything and the first NaN wins; otherwise strictly greater wins.
const beats = (v: number, m: number): boolean => v > m || (Number.isNaN(v) && !Number.isNaN(m));

/** `ArgMaxChunk[chunk](x: [..., N]) -> i32 [..., ceil(N / chunk)]`: the global index of each chunk's first maximum. */
export const ArgMaxChunk: OpDef<ArgMaxChunkParams> = {
  arity: 1,
  category: "composite",
  view: false,
  doc: "stage 1 of argmax over the last axis: first maximal index within each chunk, as a global index",
  infer([x], p, ctx) {
    const c = intParam(ctx, p.chunk, "chunk");
    if (x!.shape.length === 0) ctx.fail("shape-mismatch", "argmax needs rank >= 1");
    const n = x!.shape[x!.shape.length - 1]!;
    return { dtype: "i32", shape: [...x!.shape.slice(0, -1), Math.ceil(n / c)] };
  },
  evaluate([x], p, out) {
    const n = x!.shape[x!.shape.length - 1]!;
    const nc = out.shape[out.shape.length - 1]!;
    const rows = x!.data.length / n;
    const res: TensorData = new Int32Array(rows * nc);
    for (let r = 0; r < rows; r++)
      for (let c = 0; c < nc; c++) {
        let m = -Infinity,
          best = c * p.chunk;
        for (let i = c * p.chunk; i < Math.min(n, (c + 1) * p.chunk); i++) {
          const v = x!.data[r * n + i]!;
          if (beats(v, m)) {
            m = v;
            best = i;
          }
        }
        res[r * nc + c] = best;
      }
    return res;
  },
};

/** ArgMaxCombine(x [..., N], candidates i32 [..., C]) -> i32 [...]: the first maximal x among candidates (in order). */
export const ArgMaxCombine: OpDef = {
  arity: 2,
  category: "composite",
  view: false,
  doc: "stage 2 of argmax: reads x at each chunk winner and keeps the first maximal one",
  infer([x, c], _p, ctx) {
    if (c!.dtype !== "i32") ctx.fail("dtype-mismatch", "candidates must be i32");
    if (c!.shape.length !== x!.shape.length || c!.shape.slice(0, -1).some((d, i) => d !== x!.shape[i]))
      ctx.fail("shape-mismatch", "candidates must match x except along the last axis");
    return { dtype: "i32", shape: x!.shape.slice(0, -1) };
  },
  evaluate([x, c]) {
    const n = x!.shape[x!.shape.length - 1]!;
    const nc = c!.shape[c!.shape.length - 1]!;
    const rows = x!.data.length / n;
    const res = new Int32Array(rows);
    for (let r = 0; r < rows; r++) {
      let m = -Infinity,
        best = 0;
      for (let j = 0; j < nc; j++) {
        const idx = c!.data[r * nc + j]!;
        const v = x!.data[r * n + idx]!;
        if (j === 0 || beats(v, m)) {
          m = v;
          best = idx;
        }
      }
      res[r] = best;
    }
    return res;
  },
};

// The reduction-row synthesizer: one workgroup per row reduces expressions of the row (sum/max/min, chained so a
// later reduction may use earlier results), by a shared-memory tree or by subgroups when the caps have them,
// then evaluates an epilogue per element (RMSNorm, softmax, LayerNorm...) and per row.

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Builder, Val } from "@poot/kernel-dsl";
import { checkCaps, grid2d, pow2Workgroup } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { emitNodes, leavesOf, typeNodes } from "./expr.js";
import type { ExprNode, ExprType } from "./expr.js";
import { checkDType, elemOf, loadAs, storeAs, valueTypeOf } from "./storage.js";
import type { StorageDType } from "./storage.js";

/** An input of a row reduction: `row` = [rows, cols], `col` = [cols] (e.g. a norm weight), `scalar` = [rows]. */
export interface RowInput {
  readonly name: string;
  readonly dtype: StorageDType;
  readonly kind: "row" | "col" | "scalar";
}

/** A reduction over the columns of node `node` (an f32 node); its result is the leaf `r<index>`. */
export interface RowReduction {
  readonly kind: "sum" | "max" | "min";
  readonly node: number;
}

/** An output: per element ([rows, cols]) or per row ([rows], from nodes using only reductions and scalars). */
export interface RowOutput {
  readonly name: string;
  readonly dtype: StorageDType;
  readonly node: number;
  readonly per: "element" | "row";
}

/** A row reduction request. Leaves: input names, `r0`, `r1`, ... (reduction results, f32), `#col` (u32 column). */
export interface ReductionRowRequest {
  readonly name: string;
  readonly rows: number;
  readonly cols: number;
  readonly inputs: readonly RowInput[];
  readonly nodes: readonly ExprNode[];
  readonly reductions: readonly RowReduction[];
  readonly outputs: readonly RowOutput[];
}

const SYNTH = "reductionRow";

/** Combines two partials; max/min propagate NaN like the graph's Reduce. */
export function combine(b: Builder, kind: RowReduction["kind"], x: Val<"f32">, y: Val<"f32">): Val<"f32"> {
  if (kind === "sum") return x.add(y);
  const m = kind === "max" ? b.max(x, y) : b.min(x, y);
  return b.select(x.ne(x).or(y.ne(y)), x.add(y), m);
}

/** Workgroup reduction of each thread's `v`: subgroups then one partial per subgroup, or a shared tree. */
export function workgroupReduce(
  b: Builder,
  kind: RowReduction["kind"],
  v: Val<"f32">,
  wg: number,
  sg: number | undefined,
  scratch: Arr<"f32">,
  tid: Val<"u32">,
): Val<"f32"> {
  const { let_, var_, if_, barrier, for_, u32, subgroupAdd, subgroupMax, subgroupMin, subgroupId, subgroupLane } = b;
  if (sg !== undefined && sg > 1) {
    const part = kind === "sum" ? subgroupAdd(v) : kind === "max" ? subgroupMax(v) : subgroupMin(v);
    if_(subgroupLane.eq(0), () => scratch.set(subgroupId, part));
    barrier();
    // Every thread folds the per-subgroup partials in the same order, so all get the same value.
    const acc = var_(scratch.at(0), "wacc");
    for_(u32(1), Math.max(1, wg / sg), 1, (j) => acc.set(combine(b, kind, acc, scratch.at(j))), "j");
    const r = let_(acc, "wred");
    barrier();
    return r;
  }
  scratch.set(tid, v);
  barrier();
  for (let s = wg >> 1; s > 0; s >>= 1) {
    if_(tid.lt(s), () => scratch.set(tid, combine(b, kind, scratch.at(tid), scratch.at(tid.add(s)))));
    barrier();
  }
  const r = let_(scratch.at(0), "wred");
  barrier();
  return r;
}

/** Interleaved partial accumulators of a serial-thread row reduction ({@link serialRowReduce}). */
export const SERIAL_ROW_PARTIALS = 8;

/**
 * A row reduction in one thread (serial-thread caps, decision 2481): `P` = {@link SERIAL_ROW_PARTIALS} (fewer for
 * short rows) interleaved partials, partial i taking columns i, i + P, ... of [0, len), folded as a workgroup of P
 * lanes folds them (i with i + P/2, ...). Unrolled, with no workgroup memory and no barrier, so its names stay in
 * registers (a workgroup of 256 lanes keeps every name in its frame in memory across each barrier region).
 */
export function serialRowReduce(
  b: Builder,
  kind: RowReduction["kind"],
  len: number,
  value: (col: Val<"u32">) => Val<"f32">,
): Val<"f32"> {
  const { var_, let_, for_, f32, u32 } = b;
  const parts = pow2Workgroup(len, SERIAL_ROW_PARTIALS);
  const init = kind === "sum" ? 0 : kind === "max" ? -Infinity : Infinity;
  const accs = Array.from({ length: parts }, () => var_(f32(init), "sacc"));
  const whole = len - (len % parts);
  if (whole > 0)
    for_(
      u32(0),
      whole,
      parts,
      (c0) => accs.forEach((a, i) => a.set(combine(b, kind, a, value(i === 0 ? c0 : c0.add(i))))),
      "c",
    );
  const first = accs[0]!;
  if (whole < len) for_(u32(whole), len, 1, (c) => first.set(combine(b, kind, first, value(c))), "c");
  for (let s = parts >> 1; s > 0; s >>= 1)
    for (let i = 0; i < s; i++) accs[i]!.set(combine(b, kind, accs[i]!, accs[i + s]!));
  return let_(first, "sred");
}

/** Generates the row kernel; buffers are the inputs then the outputs, in request order. Grid: one workgroup per row. */
export function synthesizeReductionRow(req: ReductionRowRequest, caps: SynthCaps): SynthKernel {
  checkCaps(SYNTH, caps);
  const { rows, cols } = req;
  if (!Number.isInteger(rows) || rows < 1 || !Number.isInteger(cols) || cols < 1)
    throw new KernelgenError("bad_shape", `rows ${rows} × cols ${cols}`, { synth: SYNTH, param: "shape" });
  const inputs = new Map(req.inputs.map((i) => [i.name, i]));
  for (const i of req.inputs) checkDType(SYNTH, i.name, i.dtype);
  const leafType = (name: string): ExprType | undefined => {
    if (name === "#col") return "u32";
    const m = /^r(\d+)$/.exec(name);
    if (m !== null) return Number(m[1]) < req.reductions.length ? "f32" : undefined;
    const i = inputs.get(name);
    return i === undefined ? undefined : valueTypeOf(i.dtype);
  };
  const types = typeNodes(SYNTH, req.nodes, leafType);
  req.reductions.forEach((r, j) => {
    if (types[r.node] !== "f32")
      throw new KernelgenError("bad_dtype", `reduction ${j} must reduce an f32 node`, {
        synth: SYNTH,
        param: `reductions[${j}]`,
      });
    for (const l of leavesOf(req.nodes, [r.node])) {
      const m = /^r(\d+)$/.exec(l);
      if (m !== null && Number(m[1]) >= j)
        throw new KernelgenError("bad_param", `reduction ${j} uses ${l}, which is not computed yet`, {
          synth: SYNTH,
          param: `reductions[${j}]`,
        });
    }
  });
  for (const o of req.outputs) {
    checkDType(SYNTH, o.name, o.dtype);
    if (types[o.node] !== valueTypeOf(o.dtype))
      throw new KernelgenError("bad_dtype", `output ${o.name} is ${o.dtype} but node ${o.node} is ${types[o.node]}`, {
        synth: SYNTH,
        param: o.name,
      });
    if (o.per === "row") {
      for (const l of leavesOf(req.nodes, [o.node])) {
        if (l === "#col" || inputs.get(l)?.kind === "row" || inputs.get(l)?.kind === "col")
          throw new KernelgenError("bad_param", `per-row output ${o.name} depends on per-element leaf ${l}`, {
            synth: SYNTH,
            param: o.name,
          });
      }
    }
  }
  const sg = caps.subgroupSize;
  let wg = pow2Workgroup(cols, Math.min(caps.maxWorkgroup, 256));
  const useSg = sg !== undefined && sg > 1 && wg >= sg;
  // The shared scratch holds one f32 per thread (tree) or per subgroup.
  while (!useSg && wg > 1 && wg * 4 > caps.sharedBytes) wg >>= 1;
  const scratchLen = useSg ? Math.max(1, wg / (sg as number)) : wg;
  if (scratchLen * 4 > caps.sharedBytes)
    throw new KernelgenError("exceeds_caps", `needs ${scratchLen * 4} bytes of workgroup memory`, {
      synth: SYNTH,
      param: "caps.sharedBytes",
      value: caps.sharedBytes,
    });
  const k = kernel(req.name, { workgroupSize: [wg, 1, 1] }, (b) => {
    const { let_, var_, for_, if_, wid, nwg, lid, f32, return_ } = b;
    const bufs = new Map(req.inputs.map((i) => [i.name, b.buffer(i.name, elemOf(i.dtype), "read")]));
    const outs = req.outputs.map((o) => ({ o, buf: b.buffer(o.name, elemOf(o.dtype), "write") }));
    const scratch = b.shared("scratch", "f32", scratchLen);
    const row = let_(wid.y.mul(nwg.x).add(wid.x), "row");
    // Whole workgroups past the last row leave together, before any barrier.
    if_(row.ge(rows), () => return_());
    const tid = let_(lid.x, "tid");
    const results: Val<"f32">[] = [];
    const rowLeaf = (name: string): Val<ExprType> | undefined => {
      const m = /^r(\d+)$/.exec(name);
      if (m !== null) return results[Number(m[1])] as Val<"f32">;
      const inp = inputs.get(name);
      if (inp?.kind === "scalar") return loadAs(bufs.get(name)!, inp.dtype, row);
      return undefined;
    };
    // Per-row leaves are loaded once, outside the column loops.
    const scalarCache = new Map<string, Val<ExprType>>();
    const elementLeaf = (col: Val<"u32">) => {
      const cache = new Map<string, Val<ExprType>>();
      return (name: string): Val<ExprType> => {
        if (name === "#col") return col;
        const hit = cache.get(name) ?? scalarCache.get(name);
        if (hit !== undefined) return hit;
        const inp = inputs.get(name);
        let v: Val<ExprType>;
        if (inp?.kind === "row") v = loadAs(bufs.get(name)!, inp.dtype, row.mul(cols).add(col));
        else if (inp?.kind === "col") v = loadAs(bufs.get(name)!, inp.dtype, col);
        else v = rowLeaf(name) as Val<ExprType>;
        cache.set(name, v);
        return v;
      };
    };
    req.reductions.forEach((r) => {
      const init = r.kind === "sum" ? 0 : r.kind === "max" ? -Infinity : Infinity;
      const acc = var_(f32(init), "acc");
      for_(
        tid,
        cols,
        wg,
        (c) => {
          const vals = emitNodes(b, req.nodes, types, elementLeaf(c), [r.node]);
          acc.set(combine(b, r.kind, acc, vals[r.node] as Val<"f32">));
        },
        "c",
      );
      results.push(workgroupReduce(b, r.kind, acc, wg, useSg ? sg : undefined, scratch, tid));
    });
    const perElem = req.outputs.filter((o) => o.per === "element");
    if (perElem.length > 0) {
      for_(
        tid,
        cols,
        wg,
        (c) => {
          const vals = emitNodes(
            b,
            req.nodes,
            types,
            elementLeaf(c),
            perElem.map((o) => o.node),
          );
          for (const { o, buf } of outs)
            if (o.per === "element") storeAs(b, buf, o.dtype, row.mul(cols).add(c), vals[o.node] as Val<ExprType>);
        },
        "c",
      );
    }
    const perRow = req.outputs.filter((o) => o.per === "row");
    if (perRow.length > 0) {
      if_(tid.eq(0), () => {
        const vals = emitNodes(
          b,
          req.nodes,
          types,
          (n) => rowLeaf(n) as Val<ExprType>,
          perRow.map((o) => o.node),
        );
        for (const { o, buf } of outs)
          if (o.per === "row") storeAs(b, buf, o.dtype, row, vals[o.node] as Val<ExprType>);
      });
    }
  });
  return { kernel: k, grid: grid2d(rows, caps), ...(useSg ? { subgroupSize: sg } : {}) };
}

/** True if (v, i) beats (bv, bi) in numpy argmax order: NaN is the maximum (first NaN wins), ties go to the lower index. */
export function argmaxBeats(v: Val<"f32">, i: Val<"u32">, bv: Val<"f32">, bi: Val<"u32">): Val<"bool"> {
  const vn = v.ne(v);
  const bn = bv.ne(bv);
  const earlier = i.lt(bi);
  return bn.and(vn.and(earlier)).or(bn.not().and(vn.or(v.gt(bv)).or(v.eq(bv).and(earlier))));
}

/** Workgroup argmax of each thread's (best, idx) through shared `sv`/`si` (length wg, a power of two); all threads get the winner's index. */
export function workgroupArgmax(
  b: Builder,
  best: Val<"f32">,
  idx: Val<"u32">,
  wg: number,
  sv: Arr<"f32">,
  si: Arr<"u32">,
  tid: Val<"u32">,
): Val<"u32"> {
  const { if_, barrier, let_ } = b;
  sv.set(tid, best);
  si.set(tid, idx);
  barrier();
  for (let s = wg >> 1; s > 0; s >>= 1) {
    if_(tid.lt(s), () => {
      const ov = sv.at(tid.add(s));
      const oi = si.at(tid.add(s));
      if_(argmaxBeats(ov, oi, sv.at(tid), si.at(tid)), () => {
        sv.set(tid, ov);
        si.set(tid, oi);
      });
    });
    barrier();
  }
  const r = let_(si.at(0), "amax");
  barrier();
  return r;
}

// The planner: every equation of the optimized graph becomes a Plan (kernel request or imported kernel,
// launches, or no dispatch for views and aliases). Refusals are PlanErrors naming the capability.

import {
  dtypeName,
  isLiteral,
  isPacked,
  numel,
  storageBytes,
  type Eqn,
  type Graph,
  type OpTable,
  type Params,
  type ValueId,
} from "@poot/graph-ir";
import { PlanError } from "../errors.js";
import type { ResolvedOptions } from "../options.js";
import type { Region } from "../region.js";
import { planLimits, residualOnly, swigluHeads, type PlanLimits, type Target } from "../target.js";
import { groupPlans } from "./groups.js";
import { layouts } from "./layout.js";
import type { Access, Dispatch, KernelKind, KernelRequest, KernelSource, Plan } from "./types.js";

const VIEWS = new Set(["Reshape", "Slice", "Broadcast", "Transpose"]);
const MOVEMENT = new Set(["Concat", "Gather", "DynamicSlice", "DynamicUpdateSlice", "DecodePacked", ...VIEWS]);

/** Readers of each value (equation indices). */
export function readersOf(g: Graph): number[][] {
  const r: number[][] = g.values.map(() => []);
  g.eqns.forEach((e, k) => {
    for (const o of e.inputs) if (!isLiteral(o)) r[o]!.push(k);
  });
  return r;
}

const LAYER = /(?:^|\.)(?:layers|blk)\.(\d+)(?:\.|$)/;

function layerOfName(n: string | undefined): number | null {
  const m = n === undefined ? null : LAYER.exec(n);
  return m === null ? null : Number(m[1]);
}

/**
 * Layer of an equation: its value's name; else, when it reads a layer's weights or states, the highest
 * such layer or producing layer (a table first named in layer 0 but read by layer 1 counts for layer 1);
 * else outside any layer when it reads only global weights (final norm, tied head); else its producers' layer.
 */
function layerOf(g: Graph, e: Eqn, known: ReadonlyMap<ValueId, number | null>): number | null {
  const own = layerOfName(g.values[e.out]!.name);
  if (own !== null) return own;
  let fromParams = -1,
    fromProducers = -1,
    global = false;
  for (const o of e.inputs) {
    if (isLiteral(o)) continue;
    const v = g.values[o]!;
    if (v.storage.kind === "const" || v.storage.kind === "state") {
      const n = layerOfName(v.name);
      if (n === null) global ||= v.storage.kind === "const";
      else fromParams = Math.max(fromParams, n);
    } else fromProducers = Math.max(fromProducers, known.get(o) ?? -1);
  }
  if (fromParams >= 0) return Math.max(fromParams, fromProducers);
  if (global) return null;
  return fromProducers < 0 ? null : fromProducers;
}

function kindOf(g: Graph, e: Eqn, ops: OpTable): KernelKind {
  switch (e.op) {
    case "Fused":
      return "elementwise";
    case "FusedRow":
    case "Reduce":
    case "ArgMaxChunk":
    case "ArgMaxCombine":
      return "reduction-row";
    case "ContractionEpilogue":
    case "MatMul":
      return rowsOf(g, e) <= 8 ? "gemv" : "gemm";
    case "PackedContraction":
      return rowsOf(g, e) <= 8 ? "dequant-gemv" : "dequant-gemm";
    case "Attention":
      return "attention";
    case "Rope":
      return "rope";
    case "IndexedMatMul":
      return "indexed-matmul";
    case "PackedRowGather":
      return "movement";
    default:
      if (MOVEMENT.has(e.op) || e.op === "Iota") return "movement";
      if (ops[e.op]?.category === "elementwise") return "elementwise";
      throw new PlanError("unsupported-op", `no kernel strategy for ${e.op}`, {
        eqn: g.eqns.indexOf(e),
        op: e.op,
        value: e.out,
      });
  }
}

function rowsOf(g: Graph, e: Eqn): number {
  return numel(g.values[e.inputs[0] as number]!.shape.slice(0, -1));
}

/** Splits `total` workgroups over the grid's three dimensions, chunking when even that is too few. */
function launches(total: number, wg: number, L: PlanLimits): Dispatch[] {
  const [gx, gy, gz] = L.maxGrid;
  const cap = gx * gy * gz;
  const out: Dispatch[] = [];
  for (let start = 0; start < total; start += cap) {
    const n = Math.min(cap, total - start);
    const x = Math.min(n, gx),
      y = Math.min(Math.ceil(n / x), gy),
      z = Math.ceil(n / (x * y));
    out.push(
      total > cap ? { grid: [x, y, z], workgroup: wg, chunk: { start, count: n } } : { grid: [x, y, z], workgroup: wg },
    );
  }
  return out.length === 0 ? [{ grid: [1, 1, 1], workgroup: wg }] : out;
}

function schedule(e: Eqn): { readonly [k: string]: number | string } {
  return (e.params.schedule ?? {}) as { readonly [k: string]: number | string };
}

function workgroups(g: Graph, e: Eqn, kind: KernelKind, L: PlanLimits): { total: number; wg: number } {
  const s = schedule(e);
  const wg = Math.min(L.maxWorkgroupSize, typeof s.workgroup === "number" ? s.workgroup : 256);
  const out = g.values[e.out]!.shape;
  switch (kind) {
    case "gemv":
    case "dequant-gemv":
    case "gemm":
    case "dequant-gemm":
    case "indexed-matmul": {
      if (e.params.routing !== undefined) return { total: Math.max(1, Math.ceil(numel(out) / wg)), wg };
      const n = e.op === "IndexedMatMul" ? g.values[e.inputs[1] as number]!.shape[1]! : accN(g, e);
      if (kind.endsWith("gemv")) return { total: Math.ceil(n / Number(s.tileN ?? 8)) * rowsOf(g, e), wg };
      const m = rowsOf(g, e);
      return { total: Math.ceil(m / Number(s.tileM ?? 64)) * Math.ceil(n / Number(s.tileN ?? 64)), wg };
    }
    case "attention": {
      const q = g.values[e.inputs[0] as number]!.shape;
      const tq = q[q.length - 2]!;
      return { total: numel(q.slice(0, -2)) * Math.ceil(tq / Number(s.qTile ?? 1)) * Number(s.splitK ?? 1), wg };
    }
    case "reduction-row":
      return { total: Math.max(1, numel(out.slice(0, -1))), wg };
    default: {
      // Writes in place touch only the update window.
      const region = (e.params.region ?? null) as Region | null;
      const res = region?.nodes[region.result];
      const n =
        e.op === "DynamicUpdateSlice"
          ? numel(g.values[e.inputs[1] as number]!.shape)
          : res?.op === "DynamicUpdateSlice"
            ? numel(region!.nodes[(res.args[1] as { node: number }).node]?.shape ?? out)
            : numel(out);
      return { total: Math.max(1, Math.ceil(n / (wg * Number(s.perThread ?? 1)))), wg };
    }
  }
}

function accN(g: Graph, e: Eqn): number {
  const b = g.values[e.inputs[1] as number]!.shape;
  return e.params.transposeB === true ? b[b.length - 2]! : b[b.length - 1]!;
}

function imported(g: Graph, e: Eqn, kind: KernelKind): { name: string; metadata: number[] } | undefined {
  const s = schedule(e);
  switch (e.op) {
    case "ContractionEpilogue": {
      if (e.params.epilogue !== null) return undefined;
      const a = g.values[e.inputs[0] as number]!,
        b = g.values[e.inputs[1] as number]!;
      const k = a.shape[a.shape.length - 1]!,
        n = accN(g, e);
      if (a.dtype !== "f32" || isPacked(b.dtype) || b.shape.length !== 2 || e.params.accDtype !== "f32")
        return undefined;
      if (kind === "gemv")
        return {
          name: `gemv_${dtypeName(b.dtype)}${e.params.transposeB === true ? "_nk" : "_kn"}`,
          metadata: [k, n, rowsOf(g, e), Number(s.tileN ?? 8)],
        };
      return {
        name: `gemm_tiled_${dtypeName(b.dtype)}`,
        metadata: [rowsOf(g, e), n, k, e.params.transposeB === true ? 1 : 0],
      };
    }
    case "ArgMaxChunk": {
      const x = g.values[e.inputs[0] as number]!.shape;
      return { name: "argmax_chunk", metadata: [x[x.length - 1]!, e.params.chunk as number, numel(x.slice(0, -1))] };
    }
    case "ArgMaxCombine": {
      const x = g.values[e.inputs[0] as number]!.shape,
        c = g.values[e.inputs[1] as number]!.shape;
      return { name: "argmax_combine", metadata: [x[x.length - 1]!, c[c.length - 1]!, numel(x.slice(0, -1))] };
    }
    case "PackedRowGather": {
      const t = g.values[e.inputs[0] as number]!;
      return {
        name: "packed_row_gather",
        metadata: [
          storageBytes(t.dtype, numel(t.shape.slice(1))),
          t.shape[0]!,
          numel(g.values[e.inputs[1] as number]!.shape),
        ],
      };
    }
    default:
      return undefined;
  }
}

/**
 * The one-node region of an unfused primitive with literal operands (`Mul(x, 2.0)`), or null when it has none:
 * requests list only value inputs, so a literal must travel in the region (`{ in: j }` numbers the value inputs).
 */
function literalRegion(g: Graph, e: Eqn): Region | null {
  if (!e.inputs.some(isLiteral)) return null;
  let j = 0;
  const args = e.inputs.map((o) => (isLiteral(o) ? { lit: o.lit, dtype: o.dtype } : { in: j++ }));
  const out = g.values[e.out]!;
  if (isPacked(out.dtype)) return null;
  return { nodes: [{ op: e.op, args, params: e.params, dtype: out.dtype, shape: out.shape }], result: 0 };
}

/** Plans every equation; throws PlanError when the target lacks what an equation needs. */
export function planGraph(g: Graph, target: Target, options: ResolvedOptions, ops: OpTable): Plan[] {
  const L = planLimits(target);
  return groupPlans(g, planEach(g, target, options, ops, L), L);
}

function planEach(g: Graph, target: Target, options: ResolvedOptions, ops: OpTable, L: PlanLimits): Plan[] {
  const readers = readersOf(g);
  const lay = layouts(g, readers);
  const caps16 = target.caps.dtypes;
  const layerOfValue = new Map<ValueId, number | null>();
  // Values that depend on weights and compiler constants only are prepared once, when weights are bound.
  const bindTime = new Set<ValueId>(
    g.values.filter((v) => v.storage.kind === "const" || v.storage.kind === "computed").map((v) => v.id),
  );
  return g.eqns.map((e, k): Plan => {
    const layer = layerOf(g, e, layerOfValue);
    layerOfValue.set(e.out, layer);
    const ins = e.inputs.filter((o): o is number => !isLiteral(o));
    const phase = ins.length > 0 && ins.every((o) => bindTime.has(o)) ? "bind" : "step";
    if (phase === "bind") bindTime.add(e.out);
    const outAcc = lay.get(e.out)!;
    if (VIEWS.has(e.op) && outAcc.root !== e.out)
      return {
        eqn: k,
        op: e.op,
        out: e.out,
        layer,
        phase,
        kernel: { provenance: "none", reason: "view" },
        dispatches: [],
      };
    const kind = kindOf(g, e, ops);
    const inputs: Access[] = e.inputs.filter((o): o is number => !isLiteral(o)).map((o) => lay.get(o)!);
    const roots = new Set([...inputs.map((a) => a.root), outAcc.root]);
    const ctx = { eqn: k, op: e.op, value: e.out };
    if (roots.size > L.maxStorageBuffers)
      throw new PlanError("missing-capability", `the kernel binds ${roots.size} buffers`, {
        ...ctx,
        capability: "maxStorageBuffers",
        needed: roots.size,
        available: L.maxStorageBuffers,
      });
    if (kind === "attention" && Number(schedule(e).kvTile ?? 0) < 16) {
      const q = g.values[e.inputs[0] as number]!.shape,
        v = g.values[e.inputs[2] as number]!.shape;
      const need = 2 * 16 * (q[q.length - 1]! + v[v.length - 1]!) * 4;
      throw new PlanError("missing-capability", "a flash attention tile of 16 keys does not fit in workgroup memory", {
        ...ctx,
        capability: "sharedBytes",
        needed: need,
        available: L.sharedBytes,
      });
    }
    let chunks = 1;
    for (const a of [...inputs, outAcc]) {
      const v = g.values[a.root]!;
      const bytes = storageBytes(v.dtype, numel(v.shape));
      if (bytes <= L.maxBindingBytes) continue;
      // A contraction's [N, K] weight can be bound in row ranges, one launch per range; nothing else can be split.
      const splittable =
        (kind === "gemv" || kind === "gemm" || kind === "dequant-gemv") &&
        a.value === e.inputs[1] &&
        e.params.transposeB === true &&
        e.params.epilogue === null;
      if (!splittable)
        throw new PlanError("missing-capability", `binding %${a.root} is ${bytes} bytes`, {
          ...ctx,
          capability: "maxBindingBytes",
          needed: bytes,
          available: L.maxBindingBytes,
        });
      chunks = Math.max(chunks, Math.ceil(bytes / L.maxBindingBytes));
    }
    const request: KernelRequest = {
      kind,
      op: e.op,
      inputs,
      output: outAcc,
      params: e.params as Params,
      region: ((e.params.region ?? e.params.epilogue ?? null) as Region | null) ?? literalRegion(g, e),
      emulated16: [...inputs, outAcc].some(
        (a) => (a.dtype === "bf16" && !caps16.bf16) || (a.dtype === "f16" && !caps16.f16),
      ),
    };
    const imp = options.preferImported ? imported(g, e, kind) : undefined;
    const kernel: KernelSource =
      imp === undefined ? { provenance: "synthesized", request } : { provenance: "imported", ...imp, request };
    const { total, wg } = workgroups(g, e, kind, L);
    const per = Math.ceil(total / chunks);
    const dispatches =
      chunks === 1
        ? launches(total, wg, L)
        : Array.from({ length: chunks }, (_, c) => ({
            ...launches(per, wg, L)[0]!,
            chunk: { start: c * per, count: Math.min(per, total - c * per) },
          }));
    // Two heads on kernels that take no epilogue of theirs (decision 2345): the epilogue is a second dispatch, unless
    // it is the SwiGLU those kernels apply themselves (decision 2360).
    const w = g.values[e.inputs[1] as number]!;
    const second =
      Number(e.params.heads ?? 1) > 1 &&
      (e.params.epilogue ?? null) !== null &&
      residualOnly(target, w, e.params) &&
      !swigluHeads(target, w, request)
        ? launches(Math.max(1, Math.ceil(numel(g.values[e.out]!.shape) / wg)), wg, L)
        : [];
    return { eqn: k, op: e.op, out: e.out, layer, phase, kernel, dispatches: [...dispatches, ...second] };
  });
}

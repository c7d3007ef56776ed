// fusion: grows a region backwards from each consumer, absorbing producers read only inside it
// (pointwise ops, views, index loads, last-axis row reductions, Rope, one contraction as head).

import {
  isLiteral,
  isPacked,
  numel,
  shapeEquals,
  type Eqn,
  type Operand,
  type Params,
  type ValueId,
} from "@poot/graph-ir";
import type { Region, RegionArg, RegionNode } from "../region.js";
import type { Pass, Rewrite, Rule, RuleContext } from "../rules.js";
import { costlyOp, planLimits, residualOnly } from "../target.js";
import { deadEquation } from "./dce.js";
import { isLastAxis } from "./match.js";

const VIEWS = new Set(["Reshape", "Slice", "Broadcast", "Transpose"]);
const INDEX = new Set(["Gather", "DynamicSlice"]);
const CONTRACTIONS = new Set(["ContractionEpilogue", "PackedContraction"]);
/** Longest row (e.g. a head for per-head q/k norms) a contraction epilogue may reduce. */
const MAX_EPILOGUE_ROW = 256;

type Kind = "pointwise" | "view" | "concat" | "index" | "reduce" | "rope" | "head" | "dus" | "none";

function kindOf(cx: RuleContext, e: Eqn): Kind {
  const d = cx.draft;
  const def = d.ops[e.op];
  if (def === undefined || isPacked(d.values[e.out]!.dtype)) return "none";
  if (def.category === "elementwise") return "pointwise";
  if (VIEWS.has(e.op)) return "view";
  if (e.op === "Concat") return "concat";
  // Index loads read their table directly; the table must not be computed inside the step.
  if (INDEX.has(e.op))
    return !isLiteral(e.inputs[0]!) &&
      d.storageOf(e.inputs[0] as number) !== "device" &&
      !isPacked(d.values[e.inputs[0] as number]!.dtype)
      ? "index"
      : "none";
  if (e.op === "Reduce") {
    const rank = d.values[e.inputs[0] as number]!.shape.length;
    // Long argmaxes were split into stages already; a short one (router top-k) is one more row reduction.
    return e.params.keepdim === true && isLastAxis(e.params.axes, rank) ? "reduce" : "none";
  }
  if (e.op === "Rope") return "rope";
  if (CONTRACTIONS.has(e.op) && e.params.epilogue === null) return "head";
  if (e.op === "DynamicUpdateSlice") return "dus";
  return "none";
}

/** A rank-0 compiler constant (a batch index, a zero start) becomes a literal inside a region: no binding. */
function inlinable(cx: RuleContext, v: ValueId): boolean {
  const val = cx.draft.values[v]!;
  return (
    val.storage.kind === "computed" &&
    val.shape.length === 0 &&
    ["f32", "i32", "u32", "u8", "bool"].includes(val.dtype as string)
  );
}

/** An update can write in place: its target is a State read only here, or an in-place update of one read only here. */
function inPlaceState(cx: RuleContext, e: Eqn, depth = 0): boolean {
  const s = e.inputs[0]!;
  if (isLiteral(s) || cx.draft.users(s).length !== 1 || depth > 64) return false;
  if (cx.draft.storageOf(s) === "state") return true;
  const p = cx.draft.def(s);
  return p !== undefined && p.op === "DynamicUpdateSlice" && inPlaceState(cx, p, depth + 1);
}

/**
 * Recomputing it in every region is free: index loads, views and pointwise ops over per-step inputs and constants only,
 * none of them one of the target's costly ops (caps `costlyOps`, decision 2450).
 */
function cheap(cx: RuleContext, e: Eqn, k: Kind, depth = 0): boolean {
  if ((k !== "index" && k !== "view" && k !== "pointwise" && k !== "concat") || depth > 8) return false;
  if (costlyOp(cx.target, e.op)) return false;
  return e.inputs.every((o) => {
    if (isLiteral(o)) return true;
    const kind = cx.draft.storageOf(o);
    if (kind === "const" || kind === "computed" || kind === "slot") return true;
    const p = kind === "device" ? cx.draft.def(o) : undefined;
    return p !== undefined && cheap(cx, p, kindOf(cx, p), depth + 1);
  });
}

/** A second contraction may join the region as another head when it reads the same A the same way. */
function sameA(d: RuleContext["draft"], h: Eqn, p: Eqn): boolean {
  return (
    p.op === h.op &&
    p.inputs[0] === h.inputs[0] &&
    p.params.transposeB === h.params.transposeB &&
    p.params.accDtype === h.params.accDtype &&
    shapeEquals(d.values[p.inputs[1] as number]!.shape, d.values[h.inputs[1] as number]!.shape) &&
    shapeEquals(d.values[p.out]!.shape, d.values[h.out]!.shape)
  );
}

/** Ops an epilogue applied at the accumulator's own element may hold (besides pointwise ops and index loads). */
const OWN_ELEMENT_VIEWS = new Set(["Broadcast"]);

/**
 * Whether contraction `h` may head a region of `members` under "own-element": every member pointwise, an index
 * load or a broadcast, the region's values all of the accumulator's shape, and a second head only when A has
 * at most 8 rows.
 */
function ownElement(
  d: RuleContext["draft"],
  h: Eqn,
  members: ReadonlyMap<number, Eqn>,
  heads: number,
  anyRows = false,
): boolean {
  const acc = d.values[h.out]!.shape;
  if (heads > 0 && !anyRows && numel(d.values[h.inputs[0] as number]!.shape.slice(0, -1)) > 8) return false;
  for (const m of members.values()) {
    const def = d.ops[m.op];
    const pointwise = def !== undefined && def.category === "elementwise";
    if (!(pointwise || INDEX.has(m.op) || OWN_ELEMENT_VIEWS.has(m.op))) return false;
    if ((pointwise || m.op === "Broadcast") && !shapeEquals(d.values[m.out]!.shape, acc)) return false;
  }
  return true;
}

/** Two contractions' weights have one format (a dtype or a packed format). */
function sameFormat(d: RuleContext["draft"], a: Eqn, b: Eqn): boolean {
  const f = (e: Eqn): string => {
    const t = d.values[e.inputs[1] as number]!.dtype;
    return isPacked(t) ? t.packed.name : (t as string);
  };
  return f(a) === f(b);
}

/** The region is `acc + r` alone: an f32 Add of head `h`'s accumulator and one other value of its shape. */
function residualAdd(d: RuleContext["draft"], h: Eqn, members: ReadonlyMap<number, Eqn>): boolean {
  const [e] = [...members.values()];
  if (members.size !== 1 || e!.op !== "Add" || d.values[e!.out]!.dtype !== "f32") return false;
  const acc = d.values[h.out]!.shape;
  const r = e!.inputs.find((o) => o !== h.out);
  return (
    e!.inputs.includes(h.out) &&
    r !== undefined &&
    !isLiteral(r) &&
    shapeEquals(d.values[r]!.shape, acc) &&
    shapeEquals(d.values[e!.out]!.shape, acc)
  );
}

function grow(k0: number, root: Eqn, cx: RuleContext): Rewrite | null {
  const d = cx.draft;
  const rk = kindOf(cx, root);
  if (rk === "none" || rk === "view" || rk === "head" || (rk === "dus" && !inPlaceState(cx, root))) return null;
  const members = new Map<number, Eqn>([[k0, root]]);
  const heads: Eqn[] = [];
  let hasReduce = rk === "reduce";
  const inPlace = rk === "dus" ? 1 : 0;
  // Rows of the region: the root's shape, or the update window when the root writes a state in place.
  const rowShape = rk === "dus" ? d.values[root.inputs[1] as number]!.shape : d.values[root.out]!.shape;
  let rowLen = 0;
  // A contraction keeps a row reduction in its epilogue only when a workgroup can own whole rows (heads).
  const headRowsOk = (h: Eqn, r: number): boolean => {
    const b = d.values[h.inputs[1] as number]!.shape;
    const n = h.params.transposeB === true ? b[b.length - 2]! : b[b.length - 1]!;
    const keepsLast = [...members.values()].every(
      (m) => m.op !== "Transpose" || (m.params.perm as number[]).at(-1) === (m.params.perm as number[]).length - 1,
    );
    return r <= MAX_EPILOGUE_ROW && n % r === 0 && keepsLast;
  };
  const inputsOf = (): Set<ValueId> => {
    const defined = new Set([...members.values()].map((e) => e.out));
    const s = new Set<ValueId>();
    for (const e of members.values()) for (const o of e.inputs) if (!isLiteral(o) && !defined.has(o)) s.add(o);
    for (const h of heads) s.delete(h.out);
    return s;
  };
  const limits = planLimits(cx.target);
  const bindings = (): number => {
    const all = new Set([...inputsOf()].filter((v) => !inlinable(cx, v)));
    for (const h of heads) for (const o of h.inputs) if (!isLiteral(o)) all.add(o);
    return all.size + 1 - inPlace;
  };
  // Contractions whose kernels take only a residual add or two heads (caps residualOnlyWeights, decision 2345):
  // own-element epilogues, two heads of one format at most at any row count; a lone head is dropped at the end
  // unless its region is `acc + r`.
  let residual = false;
  const ownOnly = (): boolean => residual || cx.options.contractionEpilogues === "own-element";
  const tried = new Set<ValueId>();
  const withFeeders = (k: number, p: Eqn): number[] => {
    const added = [k];
    members.set(k, p);
    const queue = p.inputs.filter((o): o is ValueId => !isLiteral(o));
    while (queue.length > 0 && members.size < cx.options.maxRegionNodes) {
      const o = queue.pop()!;
      const qk = d.defIndex(o);
      if (qk < 0 || members.has(qk) || d.isExternal(o) || inlinable(cx, o)) continue;
      const q = d.eqns[qk]!;
      const kq = kindOf(cx, q);
      if (kq !== "view" && kq !== "index" && kq !== "pointwise" && kq !== "concat") continue;
      if (!d.users(o).every((u) => members.has(u)) && !cheap(cx, q, kq)) continue;
      members.set(qk, q);
      added.push(qk);
      for (const x of q.inputs) if (!isLiteral(x)) queue.push(x);
    }
    return added;
  };
  for (;;) {
    // Consider the latest-defined input first so every consumer of a value is decided before it.
    let best: { v: ValueId; k: number } | undefined;
    for (const v of inputsOf()) {
      if (tried.has(v)) continue;
      const k = d.defIndex(v);
      if (k >= 0 && (best === undefined || k > best.k)) best = { v, k };
    }
    if (best === undefined) break;
    tried.add(best.v);
    const p = d.eqns[best.k]!;
    const pk = kindOf(cx, p);
    // Earlier updates of the same buffer (one per sequence of a batch) join the chain the root ends.
    if (pk === "none" || (pk === "dus" && !inPlaceState(cx, p)) || d.isExternal(best.v)) continue;
    const exclusive = d.users(best.v).every((u) => members.has(u));
    if (!exclusive && !cheap(cx, p, pk)) continue;
    if (pk === "head") {
      // "own-element": the epilogue must apply at the accumulator's own element (no RoPE partner, row reduction,
      // in-place write or reshaped result), and extra heads need a GEMV-sized A.
      const only = residualOnly(cx.target, d.values[p.inputs[1] as number]!, p.params);
      if (heads.length > 0 && (only !== residual || (only && !sameFormat(d, heads[0]!, p)))) continue;
      if ((only || ownOnly()) && !ownElement(d, p, members, heads.length, only)) continue;
      if (only && heads.length === 2) continue;
      // The first contraction heads the region; another over the same A joins it (horizontal fusion: gate/up).
      const joins = heads.length === 0 || (sameA(d, heads[0]!, p) && !hasReduce);
      if (!exclusive || !joins || (hasReduce && !headRowsOk(p, rowLen))) continue;
      heads.push(p);
      if (bindings() > limits.maxStorageBuffers) heads.pop();
      residual = heads.length > 0 && only;
      continue;
    }
    // Under "own-element" a headed region takes no RoPE, row reduction or in-place write after its head either.
    if (ownOnly() && heads.length > 0 && (pk === "reduce" || pk === "rope" || pk === "dus")) continue;
    if (pk === "reduce") {
      const x = d.values[p.inputs[0] as number]!.shape;
      // One reduction row per workgroup: it must hold whole region rows (a norm over all heads before a per-head RoPE).
      if (
        x.at(-1)! % rowShape.at(-1)! !== 0 ||
        numel(x) !== numel(rowShape) ||
        heads.length > 1 ||
        (heads.length === 1 && !headRowsOk(heads[0]!, x.at(-1)!))
      )
        continue;
      rowLen = Math.max(rowLen, x.at(-1)!);
    }
    if (members.size + 1 > cx.options.maxRegionNodes) break;
    // Take the member with the views and cheap loads feeding it, so the binding count is what the region will bind.
    const added = withFeeders(best.k, p);
    if (bindings() > limits.maxStorageBuffers) {
      for (const a of added) members.delete(a);
      continue;
    }
    if (pk === "reduce") hasReduce = true;
  }
  if (residual && heads.length === 1 && !residualAdd(d, heads[0]!, members)) heads.pop();
  if (members.size === 1 && heads.length === 0) return null;
  return { kind: "replace", eqn: build(cx, members, heads, root, hasReduce) };
}

function build(cx: RuleContext, members: Map<number, Eqn>, heads: readonly Eqn[], root: Eqn, row: boolean): Eqn {
  const d = cx.draft;
  const order = [...members.keys()].sort((a, b) => a - b);
  const nodeOf = new Map<ValueId, number>();
  const externals: ValueId[] = [];
  const inIndex = new Map<ValueId, number>();
  // Epilogue inputs: the heads' accumulators first, then the region's other inputs.
  heads.forEach((h, i) => inIndex.set(h.out, i));
  const base = heads.length;
  const arg = (o: Operand): RegionArg => {
    if (isLiteral(o)) return o;
    if (inlinable(cx, o)) {
      const v = d.values[o]!;
      return { lit: (v.storage as { data: ArrayLike<number> }).data[0]!, dtype: v.dtype as RegionNode["dtype"] };
    }
    const n = nodeOf.get(o);
    if (n !== undefined) return { node: n };
    let i = inIndex.get(o);
    if (i === undefined) {
      i = base + externals.length;
      externals.push(o);
      inIndex.set(o, i);
    }
    return { in: i };
  };
  const nodes: RegionNode[] = order.map((k, idx) => {
    const e = members.get(k)!;
    const v = d.values[e.out]!;
    const n: RegionNode = {
      op: e.op,
      args: e.inputs.map(arg),
      params: e.params,
      dtype: v.dtype as RegionNode["dtype"],
      shape: [...v.shape],
    };
    nodeOf.set(e.out, idx);
    return n;
  });
  const region: Region = { nodes, result: nodeOf.get(root.out)! };
  const h = heads[0];
  if (h !== undefined) {
    const params = { ...h.params, ...(heads.length > 1 ? { heads: heads.length } : {}), epilogue: region } as Params;
    return { op: h.op, inputs: [h.inputs[0]!, ...heads.map((x) => x.inputs[1]!), ...externals], params, out: root.out };
  }
  return { op: row ? "FusedRow" : "Fused", inputs: externals, params: { region } as Params, out: root.out };
}

const rules: Rule[] = [deadEquation, { name: "region", ops: "*", apply: (k, e, cx) => grow(k, e, cx) }];

/** The fusion pass (walks consumers first). */
export const fusion: Pass = {
  name: "fusion",
  numerics: "exact",
  doc: "pointwise regions, row regions, contraction epilogues and in-place KV writes",
  rules,
  reverse: true,
};

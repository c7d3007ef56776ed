// fusion: grows a region backwards from each consumer, absorbing producers read only inside it
// (pointwise ops, views, index loads, last-axis row reductions, Rope, one contraction as head).

import { isLiteral, isPacked, type Eqn, type Operand, type Params, type ValueId } from "@poot/graph-ir";
import type { Region, RegionArg, RegionNode } from "../region.js";
import type { Pass, Rewrite, Rule, RuleContext } from "../rules.js";
import { planLimits } from "../target.js";
import { deadEquation } from "./dce.js";
import { isLastAxis } from "./match.js";

const VIEWS = new Set(["Reshape", "Slice", "Broadcast", "Transpose"]);
const INDEX = new Set(["Gather", "DynamicSlice"]);
const CONTRACTIONS = new Set(["ContractionEpilogue", "PackedContraction"]);

type Kind = "pointwise" | "view" | "concat" | "index" | "reduce" | "rope" | "head" | "dus" | "none";

function kindOf(cx: RuleContext, e: Eqn): Kind {
  const d = cx.draft;
  const def = d.ops[e.op];
  if (def === undefined || isPacked(d.values[e.out]!.dtype)) return "none";
  if (def.category === "elementwise") return "pointwise";
  if (VIEWS.has(e.op)) return "view";
  if (e.op === "Concat") return "concat";
  // Index loads read their table directly; the table must not be computed inside the step.
  if (INDEX.has(e.op)) return !isLiteral(e.inputs[0]!) && d.storageOf(e.inputs[0] as number) !== "device" && !isPacked(d.values[e.inputs[0] as number]!.dtype) ? "index" : "none";
  if (e.op === "Reduce") {
    const rank = d.values[e.inputs[0] as number]!.shape.length;
    return e.params.kind !== "argmax" && e.params.keepdim === true && isLastAxis(e.params.axes, rank) ? "reduce" : "none";
  }
  if (e.op === "Rope") return "rope";
  if (CONTRACTIONS.has(e.op) && e.params.epilogue === null) return "head";
  if (e.op === "DynamicUpdateSlice") return "dus";
  return "none";
}

/** A state read only by this update can be written in place: the region's output aliases it. */
function inPlaceState(cx: RuleContext, e: Eqn): boolean {
  const s = e.inputs[0]!;
  return !isLiteral(s) && cx.draft.storageOf(s) === "state" && cx.draft.users(s).length === 1;
}

/** Recomputing it in every region is free: index loads, views and pointwise ops over per-step inputs and constants only. */
function cheap(cx: RuleContext, e: Eqn, k: Kind, depth = 0): boolean {
  if ((k !== "index" && k !== "view" && k !== "pointwise") || depth > 4) return false;
  return e.inputs.every((o) => {
    if (isLiteral(o)) return true;
    const kind = cx.draft.storageOf(o);
    if (kind === "const" || kind === "computed" || kind === "slot") return true;
    const p = kind === "device" ? cx.draft.def(o) : undefined;
    return p !== undefined && cheap(cx, p, kindOf(cx, p), depth + 1);
  });
}

function grow(k0: number, root: Eqn, cx: RuleContext): Rewrite | null {
  const d = cx.draft;
  const rk = kindOf(cx, root);
  if (rk === "none" || rk === "view" || rk === "head" || (rk === "dus" && !inPlaceState(cx, root))) return null;
  const members = new Map<number, Eqn>([[k0, root]]);
  let head: Eqn | undefined, hasReduce = rk === "reduce", inPlace = rk === "dus" ? 1 : 0;
  const rootShape = d.values[root.out]!.shape;
  const inputsOf = (): Set<ValueId> => {
    const defined = new Set([...members.values()].map((e) => e.out));
    const s = new Set<ValueId>();
    for (const e of members.values()) for (const o of e.inputs) if (!isLiteral(o) && !defined.has(o)) s.add(o);
    if (head !== undefined) s.delete(head.out);
    return s;
  };
  const limits = planLimits(cx.target);
  const bindings = (): number => inputsOf().size + (head === undefined ? 0 : head.inputs.length) + 1 - inPlace;
  const tried = new Set<ValueId>();
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
    if (pk === "none" || pk === "dus" || d.isExternal(best.v)) continue;
    const exclusive = d.users(best.v).every((u) => members.has(u));
    if (!exclusive && !cheap(cx, p, pk)) continue;
    if (pk === "head") {
      if (head !== undefined || hasReduce || !exclusive) continue;
      head = p;
      if (bindings() > limits.maxStorageBuffers) head = undefined;
      continue;
    }
    if (pk === "reduce") {
      const x = d.values[p.inputs[0] as number]!.shape;
      // One row per workgroup: the reduction's rows must be the region's rows.
      if (head !== undefined || x.length !== rootShape.length || x.some((s, i) => s !== rootShape[i])) continue;
    }
    if (members.size + 1 > cx.options.maxRegionNodes) break;
    members.set(best.k, p);
    if (bindings() > limits.maxStorageBuffers) {
      members.delete(best.k);
      continue;
    }
    if (pk === "reduce") hasReduce = true;
  }
  if (members.size === 1 && head === undefined) return null;
  return { kind: "replace", eqn: build(cx, members, head, root, hasReduce) };
}

function build(cx: RuleContext, members: Map<number, Eqn>, head: Eqn | undefined, root: Eqn, row: boolean): Eqn {
  const d = cx.draft;
  const order = [...members.keys()].sort((a, b) => a - b);
  const nodeOf = new Map<ValueId, number>();
  const externals: ValueId[] = [];
  const inIndex = new Map<ValueId, number>();
  const base = head === undefined ? 0 : 1;
  if (head !== undefined) inIndex.set(head.out, 0);
  const arg = (o: Operand): RegionArg => {
    if (isLiteral(o)) return o;
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
    const n: RegionNode = { op: e.op, args: e.inputs.map(arg), params: e.params, dtype: v.dtype as RegionNode["dtype"], shape: [...v.shape] };
    nodeOf.set(e.out, idx);
    return n;
  });
  const region: Region = { nodes, result: nodeOf.get(root.out)! };
  if (head !== undefined) return { op: head.op, inputs: [...head.inputs, ...externals], params: { ...head.params, epilogue: region } as Params, out: root.out };
  return { op: row ? "FusedRow" : "Fused", inputs: externals, params: { region } as Params, out: root.out };
}

const rules: Rule[] = [deadEquation, { name: "region", ops: "*", apply: (k, e, cx) => grow(k, e, cx) }];

/** The fusion pass (walks consumers first). */
export const fusion: Pass = { name: "fusion", numerics: "exact", doc: "pointwise regions, row regions, contraction epilogues and in-place KV writes", rules, reverse: true };

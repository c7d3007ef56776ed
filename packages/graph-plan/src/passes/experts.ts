// Routed experts: the tracers' dense expert evaluation (every expert on every token, weighted by a top-k gate
// matrix that is zero elsewhere, summed over experts) becomes two gate-routed IndexedMatMuls (gate/up, down).

import { isLiteral, type Eqn, type Operand, type ValueId } from "@poot/graph-ir";
import type { Region, RegionArg, RegionNode } from "../region.js";
import type { Pass, Rewrite, Rule, RuleContext } from "../rules.js";
import { deadEquation } from "./dce.js";
import { defIs, iotaOf, isLastAxis, isScalar } from "./match.js";

const CONTRACTIONS = ["ContractionEpilogue", "PackedContraction"];

/** A near-match: the chain is a routed-expert sum, but one check fails. */
class Refusal extends Error {
  constructor(
    readonly check: string,
    detail: string,
  ) {
    super(detail);
  }
}

function refuse(check: string, detail: string): never {
  throw new Refusal(check, detail);
}

/** A value read only by `eqn` (so the rewrite may drop it). */
function onlyFor(cx: RuleContext, v: Operand, eqn: Eqn): boolean {
  return !isLiteral(v) && !cx.draft.isExternal(v) && cx.draft.users(v).every((u) => cx.draft.eqns[u] === eqn);
}

/** A contraction over stacked expert weights [E, N, K] read transposed, with no epilogue yet. */
function expertContraction(cx: RuleContext, o: Operand, experts: number): Eqn | undefined {
  const e = defIs(cx.draft, o, ...CONTRACTIONS);
  if (e === undefined || e.params.epilogue !== null || e.params.transposeB !== true || (e.params.heads ?? 1) !== 1)
    return undefined;
  const w = cx.draft.values[e.inputs[1] as number]!;
  return w.shape.length === 3 && w.shape[0] === experts ? e : undefined;
}

/**
 * How many experts a row of the gates can name: G = Select(Or(Eq(iota, argmax_1), ...), P, 0), optionally divided
 * by its own row sum (renormalized top-k). Each Eq of an axis-1 iota with a [T, 1] index is one-hot, so a row has at
 * most as many non-zero entries as there are Eq terms (a zero row sum gives NaN: impossible after a softmax).
 */
function topKSlots(cx: RuleContext, g: ValueId): number {
  const d = cx.draft;
  let sel = defIs(d, g, "Select");
  const div = defIs(d, g, "Div");
  if (div !== undefined) {
    const sum = defIs(d, div.inputs[1], "Reduce");
    sel = defIs(d, div.inputs[0], "Select");
    const rank = d.values[g]!.shape.length;
    if (
      sum === undefined ||
      sum.params.kind !== "sum" ||
      sum.params.keepdim !== true ||
      !isLastAxis(sum.params.axes, rank) ||
      sum.inputs[0] !== div.inputs[0]
    )
      refuse("weighting", "the gates divide by something other than their own row sum");
  }
  if (sel === undefined)
    refuse("weighting", "the expert weighting is not a top-k gate (Select of a chosen mask, zero elsewhere)");
  if (!isScalar(d, sel.inputs[2], 0)) refuse("weighting", "the gates are not zero outside the chosen experts");
  const hits = (o: Operand, depth: number): number => {
    const or = defIs(d, o, "Or");
    if (or !== undefined && depth < 64) return hits(or.inputs[0]!, depth + 1) + hits(or.inputs[1]!, depth + 1);
    const eq = defIs(d, o, "Eq");
    if (eq === undefined) return refuse("weighting", "the chosen mask is not an Or of one-hot expert picks");
    const [a, b] = eq.inputs;
    const io = iotaOf(d, a) !== undefined ? a : b,
      idx = io === a ? b : a;
    const it = iotaOf(d, io);
    const iv = isLiteral(idx!) ? undefined : d.values[idx!];
    if (
      it === undefined ||
      it.axis !== 1 ||
      iv === undefined ||
      iv.dtype !== "i32" ||
      iv.shape.length !== 2 ||
      iv.shape[1] !== 1
    )
      refuse("weighting", "an expert pick is not Eq(iota over experts, one index per token)");
    return 1;
  };
  return hits(sel.inputs[0]!, 0);
}

/** The elementwise chain from the expert contractions to the down projection's input, as a per-slot region. */
function slotRegion(cx: RuleContext, h: ValueId, down: Eqn, experts: number): { region: Region | null; heads: Eqn[] } {
  const d = cx.draft;
  const heads: Eqn[] = [];
  const nodes: RegionNode[] = [];
  const nodeOf = new Map<ValueId, number>();
  const readers = new Set<Eqn>([down]);
  const shape = d.values[h]!.shape;
  const walk = (v: ValueId): RegionArg => {
    const c = expertContraction(cx, v, experts);
    if (c !== undefined) {
      if (!heads.includes(c)) heads.push(c);
      return { in: heads.indexOf(c) };
    }
    const known = nodeOf.get(v);
    if (known !== undefined) return { node: known };
    const e = d.def(v);
    const val = d.values[v]!;
    if (
      e === undefined ||
      d.ops[e.op]?.category !== "elementwise" ||
      val.shape.length !== shape.length ||
      val.shape.some((x, i) => x !== shape[i])
    )
      refuse(
        "expert-chain",
        `the expert activation contains ${e?.op ?? "an input"} [${val.shape.join(",")}], not an elementwise op over the expert projections`,
      );
    readers.add(e);
    const args = e.inputs.map((o) => (isLiteral(o) ? o : walk(o)));
    nodes.push({ op: e.op, args, params: e.params, dtype: val.dtype as RegionNode["dtype"], shape: [] });
    nodeOf.set(v, nodes.length - 1);
    return { node: nodes.length - 1 };
  };
  const top = walk(h);
  if (heads.length === 0) refuse("expert-chain", "no expert projection feeds the down projection");
  // Every value the rewrite drops must be read only inside the chain.
  for (const v of [...nodeOf.keys(), ...heads.map((c) => c.out)]) {
    if (d.isExternal(v) || !d.users(v).every((u) => readers.has(d.eqns[u]!)))
      refuse("users", `value %${v} of the expert chain is read outside it`);
  }
  const a0 = heads[0]!.inputs[0];
  if (heads.some((x) => x.inputs[0] !== a0 || x.op !== heads[0]!.op || x.params.accDtype !== heads[0]!.params.accDtype))
    refuse("shared-input", "the expert projections read different inputs");
  return { region: "in" in top ? null : { nodes, result: (top as { node: number }).node }, heads };
}

/** x [T, K] when `a` is Broadcast(Reshape(x, [1, T, K]), [E, T, K]). */
function tokenRows(cx: RuleContext, a: Operand): ValueId {
  const d = cx.draft;
  const bc = defIs(d, a, "Broadcast");
  const rs = bc === undefined ? undefined : defIs(d, bc.inputs[0], "Reshape");
  const x = rs?.inputs[0];
  if (
    rs === undefined ||
    x === undefined ||
    isLiteral(x) ||
    d.values[x]!.shape.length !== 2 ||
    d.values[rs.out]!.shape[0] !== 1
  )
    refuse("shared-input", "the experts do not all read the same token rows");
  return x;
}

function rewrite(cx: RuleContext, root: Eqn): Rewrite | null {
  const d = cx.draft;
  if (
    root.params.kind !== "sum" ||
    root.params.keepdim !== false ||
    !Array.isArray(root.params.axes) ||
    root.params.axes.length !== 1 ||
    root.params.axes[0] !== 0
  )
    return null;
  const mul = defIs(d, root.inputs[0], "Mul");
  if (mul === undefined || d.values[mul.out]!.shape.length !== 3) return null;
  const experts = d.values[mul.out]!.shape[0]!;
  const yi = mul.inputs.findIndex((o) => expertContraction(cx, o, experts) !== undefined);
  if (yi < 0) return null;
  const y = expertContraction(cx, mul.inputs[yi]!, experts)!;
  // From here the chain is a weighted sum over expert outputs: a failed check is reported.
  const tr = defIs(d, defIs(d, mul.inputs[1 - yi], "Reshape")?.inputs[0], "Transpose");
  if (tr === undefined || (tr.params.perm as number[]).join() !== "1,0" || isLiteral(tr.inputs[0]!))
    refuse("weighting", "the expert outputs are not weighted by a [tokens, experts] gate matrix");
  const gates = tr.inputs[0] as ValueId;
  const slots = topKSlots(cx, gates);
  if (!onlyFor(cx, mul.out, root) || !onlyFor(cx, y.out, mul))
    refuse("users", "a weighted expert output is read outside the sum");
  const { region, heads } = slotRegion(cx, y.inputs[0] as ValueId, y, experts);
  const x = tokenRows(cx, heads[0]!.inputs[0]!);
  if (slots >= experts) refuse("weighting", `top-${slots} of ${experts} experts: routing saves nothing`);
  const T = d.values[x]!.shape[0]!,
    F = d.values[y.inputs[0] as number]!.shape[2]!;
  const slotShape = [T, slots, F];
  const upRegion: Region | null =
    region === null ? null : { ...region, nodes: region.nodes.map((n) => ({ ...n, shape: slotShape })) };
  const hDtype = d.values[y.inputs[0] as number]!.dtype;
  const hv = d.addValue(hDtype, slotShape, { kind: "device" }, d.values[y.inputs[0] as number]!.name);
  const up: Eqn = {
    op: "IndexedMatMul",
    inputs: [x, ...heads.map((c) => c.inputs[1]!), gates],
    params: {
      accDtype: heads[0]!.params.accDtype!,
      ...(heads.length > 1 ? { heads: heads.length } : {}),
      epilogue: upRegion,
      routing: { by: "gates", slots, combine: "slots", post: null },
    },
    out: hv,
  };
  // The gate weighting replays the traced Mul (same operand order and dtype), one slot at a time.
  const wv = d.values[mul.out]!;
  const acc: RegionArg = { in: 0 },
    gw: RegionArg = { in: 1 };
  const weighting: Region = {
    nodes: [
      {
        op: "Mul",
        args: yi === 0 ? [acc, gw] : [gw, acc],
        params: {},
        dtype: wv.dtype as RegionNode["dtype"],
        shape: [T, slots, wv.shape[2]!],
      },
    ],
    result: 0,
  };
  const down: Eqn = {
    op: "IndexedMatMul",
    inputs: [hv, y.inputs[1]!, gates],
    params: {
      accDtype: y.params.accDtype!,
      epilogue: weighting,
      routing: { by: "gates", slots, combine: "sum", post: null },
    },
    out: root.out,
  };
  return { kind: "replace", eqn: down, before: [up] };
}

/** A residual add after the routed sum joins it as its `post` region (the sum is read nowhere else). */
function residual(cx: RuleContext, e: Eqn): Rewrite | null {
  const d = cx.draft;
  const i = e.inputs.findIndex((o) => {
    const p = defIs(d, o, "IndexedMatMul");
    return (
      p !== undefined &&
      (p.params.routing as { combine?: string } | undefined)?.combine === "sum" &&
      (p.params.routing as { post: unknown }).post === null &&
      onlyFor(cx, o, e)
    );
  });
  if (i < 0) return null;
  const p = d.def(e.inputs[i] as ValueId)!;
  const other = e.inputs[1 - i]!;
  const out = d.values[e.out]!,
    sum = d.values[p.out]!;
  if (out.shape.length !== sum.shape.length || out.shape.some((x, k) => x !== sum.shape[k]) || out.dtype !== sum.dtype)
    return null;
  // Post inputs are (the sum, ...extra); extras follow x, the weights and the gates among the op's inputs.
  const self: RegionArg = { in: 0 };
  const them: RegionArg = isLiteral(other)
    ? other
    : { in: p.inputs.length - 1 - ((p.params.heads as number | undefined) ?? 1) };
  const post: Region = {
    nodes: [
      {
        op: "Add",
        args: i === 0 ? [self, them] : [them, self],
        params: {},
        dtype: out.dtype as RegionNode["dtype"],
        shape: [...out.shape],
      },
    ],
    result: 0,
  };
  const routing = { ...(p.params.routing as object), post };
  return {
    kind: "replace",
    eqn: {
      ...p,
      inputs: isLiteral(other) ? p.inputs : [...p.inputs, other],
      params: { ...p.params, routing } as Eqn["params"],
      out: e.out,
    },
  };
}

const rules: Rule[] = [
  {
    name: "routed-experts",
    ops: ["Reduce"],
    apply(_k, e, cx) {
      try {
        return rewrite(cx, e);
      } catch (err) {
        if (!(err instanceof Refusal)) throw err;
        const v = cx.draft.values[e.out]!;
        cx.decline({
          pattern: "experts",
          value: e.out,
          ...(v.name === undefined ? {} : { name: v.name }),
          check: err.check,
          detail: err.message,
        });
        return null;
      }
    },
  },
  { name: "expert-residual", ops: ["Add"], apply: (_k, e, cx) => residual(cx, e) },
  deadEquation,
];

/** The routed-experts pass. */
export const routedExperts: Pass = {
  name: "routed-experts",
  numerics: "exact",
  doc: "dense top-k expert sums become gate-routed IndexedMatMuls (gate/up with the activation, down with the gate weighting and the residual); exact for finite expert outputs",
  rules,
  // Consumers first, so the dropped chain (and the sum a residual add absorbs) dies in the same sweep.
  reverse: true,
};

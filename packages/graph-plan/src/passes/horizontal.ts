// horizontal-groups (option horizontalFusion "grouped", the default): GEMV contractions that read one A the same
// way and keep their own epilogues and outputs (q/k/v) are proved joinable and placed side by side for one dispatch.

import { isLiteral, numel, shapeEquals, type Eqn, type Params, type ValueId } from "@poot/graph-ir";
import type { Region } from "../region.js";
import type { Pass, Rewrite, Rule, RuleContext } from "../rules.js";
import { planLimits } from "../target.js";

const CONTRACTIONS = ["ContractionEpilogue", "PackedContraction"];
const VIEWS = new Set(["Reshape", "Slice", "Broadcast", "Transpose"]);
/** Rows a GEMV-shaped contraction may have (the planner's gemv bound). */
const GEMV_ROWS = 8;

/** Where a contraction sits in its horizontal group (params.group): member `index` of `size` consecutive equations. */
export type HorizontalGroup = {
  /** Position in the group (the group's `size` equations are consecutive). */
  readonly index: number;
  /** Members in the group. */
  readonly size: number;
};

type Draft = RuleContext["draft"];

/** The value A is read from, looking through views (two views of one source read it differently). */
function sourceOf(d: Draft, v: ValueId): ValueId {
  for (let depth = 0; depth < 16; depth++) {
    const p = d.def(v);
    if (p === undefined || !VIEWS.has(p.op) || isLiteral(p.inputs[0]!)) return v;
    v = p.inputs[0] as ValueId;
  }
  return v;
}

/** Every contraction reading the A source of `e` (directly or through a view), in equation order. */
function readersOfSource(d: Draft, src: ValueId): number[] {
  const out = new Set<number>();
  const queue = [src];
  while (queue.length > 0) {
    const v = queue.pop()!;
    for (const k of d.users(v)) {
      const u = d.eqns[k];
      if (u === null || u === undefined) continue;
      if (CONTRACTIONS.includes(u.op) && u.inputs[0] === v) out.add(k);
      else if (VIEWS.has(u.op) && u.inputs[0] === v) queue.push(u.out);
    }
  }
  return [...out].sort((a, b) => a - b);
}

/** The first way `c` reads A or rounds its accumulator differently from `ref` (numerical), or undefined. */
function readDiffers(d: Draft, ref: Eqn, c: Eqn): string | undefined {
  if (c.inputs[0] !== ref.inputs[0]) return "A is read through a different view of its source";
  if (c.op !== ref.op) return `${c.op} and ${ref.op} decode their weights differently`;
  if (c.params.transposeB !== ref.params.transposeB) return "one weight is read transposed and the other is not";
  if (c.params.accDtype !== ref.params.accDtype)
    return `accumulators round to ${String(c.params.accDtype)} and ${String(ref.params.accDtype)}`;
  const b = d.values[c.inputs[1] as ValueId]!,
    rb = d.values[ref.inputs[1] as ValueId]!;
  if (JSON.stringify(b.dtype) !== JSON.stringify(rb.dtype)) return "the weights have different storage dtypes";
  if (!shapeEquals(b.shape.slice(0, -2), rb.shape.slice(0, -2))) return "the weights have different batch dims";
  return undefined;
}

/** Whether `c` reads (transitively, through equations after `from`) the output of another member. */
function dependsOn(d: Draft, c: Eqn, outs: ReadonlySet<ValueId>, from: number): boolean {
  const seen = new Set<ValueId>();
  const queue = c.inputs.filter((o): o is ValueId => !isLiteral(o));
  while (queue.length > 0) {
    const v = queue.pop()!;
    if (outs.has(v)) return true;
    if (seen.has(v)) continue;
    seen.add(v);
    const k = d.defIndex(v);
    if (k > from) for (const o of d.eqns[k]!.inputs) if (!isLiteral(o)) queue.push(o);
  }
  return false;
}

/** An epilogue whose result is an in-place update of one of its inputs writes that input's buffer (no own binding). */
function writesInPlace(e: Eqn): boolean {
  const r = e.params.epilogue as Region | null;
  const root = r?.nodes[r.result];
  return root?.op === "DynamicUpdateSlice" && "in" in root.args[0]!;
}

/** Distinct buffers one dispatch serving `members` binds. */
function bindings(members: readonly Eqn[]): number {
  const s = new Set<ValueId>();
  for (const m of members) {
    for (const o of m.inputs) if (!isLiteral(o)) s.add(o);
    if (!writesInPlace(m)) s.add(m.out);
  }
  return s.size;
}

/**
 * The group of the contractions reading A's source, gated against the first of them: the same A value, op,
 * transposition, accumulator dtype and weight storage (else a numerical decline), a GEMV-sized A, one B each,
 * no member reading another, and the bindings within the target's limit (else a decline). Returns equation
 * indices in order.
 */
function groupOf(cx: RuleContext, e: Eqn): number[] {
  const d = cx.draft;
  const cands = readersOfSource(d, sourceOf(d, e.inputs[0] as ValueId));
  const first = cands.find((k) => d.eqns[k]!.params.group === undefined);
  // A lone contraction is no near-match: nothing is declined.
  if (first === undefined || cands.length < 2) return [];
  const ref = d.eqns[first]!;
  const refuse = (c: Eqn, check: string, detail: string): void => {
    const name = d.values[c.out]!.name;
    cx.decline({ pattern: "horizontal", value: c.out, ...(name === undefined ? {} : { name }), check, detail });
  };
  const outs = new Set(cands.map((k) => d.eqns[k]!.out));
  const group: number[] = [];
  for (const k of cands) {
    const c = d.eqns[k]!;
    if (c.params.group !== undefined) continue;
    const differs = k === first ? undefined : readDiffers(d, ref, c);
    if (differs !== undefined) {
      cx.numericalDecline("group", c.out, "read-differs", differs);
      continue;
    }
    if (numel(d.values[c.inputs[0] as ValueId]!.shape.slice(0, -1)) > GEMV_ROWS) {
      refuse(c, "gemv", `A has more than ${GEMV_ROWS} rows`);
      continue;
    }
    if ((c.params.heads ?? 1) !== 1) {
      refuse(c, "shared-heads", "it already joins several B operands under one epilogue");
      continue;
    }
    if (((c.params.epilogue ?? null) as Region | null)?.nodes.some((n) => n.op === "Reduce") === true) {
      refuse(
        c,
        "row-epilogue",
        "its epilogue reduces rows (a per-head norm); grouped kernels do not serve row epilogues yet",
      );
      continue;
    }
    if (dependsOn(d, c, outs, first)) {
      refuse(c, "dependent", "it reads another contraction of the group");
      continue;
    }
    const next = [...group, k];
    if (bindings(next.map((i) => d.eqns[i]!)) > planLimits(cx.target).maxStorageBuffers) {
      refuse(c, "bindings", "one dispatch would bind more buffers than the target allows");
      continue;
    }
    group.push(k);
  }
  return placeable(cx, group);
}

/**
 * The members that can move to the last member's position: nothing before it reads their outputs, and no state
 * they read is read (or written in place) by anything outside the group. Refused members are declined.
 */
function placeable(cx: RuleContext, group: readonly number[]): number[] {
  const d = cx.draft;
  const last = group[group.length - 1] ?? -1;
  const inGroup = new Set(group);
  return group.filter((k) => {
    const m = d.eqns[k]!;
    const early = k !== last && d.users(m.out).some((u) => u < last);
    const shared = m.inputs.some(
      (o) => !isLiteral(o) && d.storageOf(o) === "state" && d.users(o).some((u) => !inGroup.has(u)),
    );
    if (!early && !shared) return true;
    const name = d.values[m.out]!.name;
    cx.decline({
      pattern: "horizontal",
      value: m.out,
      ...(name === undefined ? {} : { name }),
      check: "order",
      detail: early ? "its result is read before the group's last member" : "a state it reads is read elsewhere",
    });
    return false;
  });
}

const withGroup = (e: Eqn, index: number, size: number): Eqn => ({
  ...e,
  params: { ...e.params, group: { index, size } satisfies HorizontalGroup } as Params,
});

const rules: Rule[] = [
  {
    name: "group",
    ops: CONTRACTIONS,
    apply(k, e, cx): Rewrite | null {
      if (e.params.group !== undefined) return null;
      const g = groupOf(cx, e);
      if (g.length < 2 || g[g.length - 1] !== k) return null;
      // Earlier members move next to the last one (placed just before it at the next compaction).
      const before = g.slice(0, -1).map((i, n) => withGroup(cx.draft.eqns[i]!, n, g.length));
      for (const i of g.slice(0, -1)) cx.draft.remove(i);
      return { kind: "replace", eqn: withGroup(e, g.length - 1, g.length), before };
    },
  },
];

/** The horizontal-group pass (schedule only: equations keep their semantics and only move). */
export const horizontalGroups: Pass = {
  name: "horizontal-groups",
  numerics: "exact",
  doc: "GEMVs sharing A with distinct epilogues (q/k/v) proved joinable and placed side by side",
  rules,
};

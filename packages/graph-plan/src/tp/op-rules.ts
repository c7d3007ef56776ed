// How each primitive op carries layouts (decision 2500): the output's layout from its inputs', converting inputs
// where the op cannot take them. Partial sums pass only through ops linear in them (sums, scaling, movement).
import { isLiteral, PRIMITIVE_OPS, type Operand, type Params } from "@poot/graph-ir";
import { PlanError } from "../errors.js";
import type { LValue, Sharding } from "./logical.js";

/** What a rule may ask of the pass. */
export interface RuleContext {
  /** Ranks. */
  readonly ranks: number;
  /** A value of the sharded graph. */
  value(id: number): LValue;
  /** The value made whole (all-reduce or all-gather). */
  whole(id: number): number;
  /** The value split on `axis`. */
  split(id: number, axis: number): number;
  /** True for a zero scalar operand. */
  isZero(o: Operand): boolean;
}

/** The inputs as converted and the output's layout. */
export interface RuleResult {
  readonly inputs: readonly Operand[];
  readonly sharding: Sharding;
}

const WHOLE: Sharding = { kind: "whole" };
const PARTIAL: Sharding = { kind: "partial" };
const split = (axis: number): Sharding => ({ kind: "split", axis });
const norm = (a: number, r: number) => (a < 0 ? a + r : a);

/** Applies the rule of `op`; an op with none is refused naming it. */
export function opRule(
  c: RuleContext,
  op: string,
  ins: readonly Operand[],
  p: Params,
  out: readonly number[],
): RuleResult {
  const at = (i: number) => ins[i] as number;
  const sh = (o: Operand): Sharding => (isLiteral(o) ? WHOLE : c.value(o).sharding);
  const allWhole = (): RuleResult => ({ inputs: ins.map((o) => (isLiteral(o) ? o : c.whole(o))), sharding: WHOLE });
  if (ins.every((o) => sh(o).kind === "whole")) return { inputs: ins, sharding: WHOLE };
  const x = sh(ins[0]!);
  const rank = isLiteral(ins[0]!) ? 0 : c.value(at(0)).shape.length;
  switch (op) {
    case "Reshape": {
      if (x.kind !== "split") return { inputs: ins, sharding: x };
      return { inputs: ins, sharding: split(reshapeAxis(c, at(0), x.axis, out)) };
    }
    case "Transpose":
      if (x.kind !== "split") return { inputs: ins, sharding: x };
      return { inputs: ins, sharding: split((p.perm as number[]).indexOf(x.axis)) };
    case "Broadcast":
      if (x.kind !== "split") return { inputs: ins, sharding: x };
      return { inputs: ins, sharding: split(x.axis + out.length - rank) };
    case "Slice": {
      if (x.kind !== "split") return { inputs: ins, sharding: x };
      const a = x.axis;
      const full = (p.start as number[])[a] === 0 && (p.step as number[])[a] === 1;
      const whole = (p.end as number[])[a] === c.value(at(0)).shape[a];
      return full && whole ? { inputs: ins, sharding: x } : allWhole();
    }
    case "Reduce": {
      const axes = (p.axes as number[]).map((a) => norm(a, rank));
      const sum = p.kind === "sum";
      if (x.kind === "partial") return sum ? { inputs: ins, sharding: PARTIAL } : allWhole();
      if (x.kind === "whole") return { inputs: ins, sharding: WHOLE };
      if (axes.includes(x.axis)) return sum ? { inputs: ins, sharding: PARTIAL } : allWhole();
      const a = p.keepdim === true ? x.axis : x.axis - axes.filter((b) => b < x.axis).length;
      return { inputs: ins, sharding: split(a) };
    }
    case "Concat": {
      const axis = norm(p.axis as number, rank);
      const first = ins.map(sh).find((s) => s.kind === "split") as { axis: number } | undefined;
      if (first === undefined || first.axis === axis) return allWhole();
      return { inputs: ins.map((o) => c.split(o as number, first.axis)), sharding: split(first.axis) };
    }
    case "Gather": {
      const g = norm(p.axis as number, rank);
      const idx = c.whole(at(1));
      if (x.kind === "partial") return { inputs: [ins[0]!, idx], sharding: PARTIAL };
      if (x.kind !== "split" || x.axis === g) return { inputs: [c.whole(at(0)), idx], sharding: WHOLE };
      const a = x.axis < g ? x.axis : x.axis + c.value(idx).shape.length - 1;
      return { inputs: [ins[0]!, idx], sharding: split(a) };
    }
    case "DynamicSlice": {
      const starts = ins.slice(1).map((o) => (isLiteral(o) ? o : c.whole(o)));
      if (x.kind === "partial") return { inputs: [ins[0]!, ...starts], sharding: PARTIAL };
      if (x.kind !== "split") return { inputs: [ins[0]!, ...starts], sharding: WHOLE };
      const keep = (p.sizes as number[])[x.axis] === c.value(at(0)).shape[x.axis] && c.isZero(starts[x.axis]!);
      return keep ? { inputs: [ins[0]!, ...starts], sharding: x } : allWhole();
    }
    case "DynamicUpdateSlice":
      return updateSlice(c, ins, allWhole);
    case "MatMul":
      return matmul(c, at(0), at(1), out.length);
    default:
      break;
  }
  const def = PRIMITIVE_OPS[op as keyof typeof PRIMITIVE_OPS];
  if (def === undefined || def.category !== "elementwise")
    throw new PlanError("tp-unsupported", `tensor parallelism has no sharding rule for op ${op}`, { op });
  return elementwise(c, op, ins, out.length);
}

/** The axis of a reshape's result that keeps the input's split (same elements before it, same piece size). */
function reshapeAxis(c: RuleContext, id: number, a: number, out: readonly number[]): number {
  const v = c.value(id);
  const prod = (s: readonly number[]) => s.reduce((x, y) => x * y, 1);
  const before = prod(v.shape.slice(0, a));
  const piece = (v.shape[a]! / c.ranks) * prod(v.shape.slice(a + 1));
  for (let b = 0; b < out.length; b++) {
    if (prod(out.slice(0, b)) !== before || out[b]! % c.ranks !== 0) continue;
    if ((out[b]! / c.ranks) * prod(out.slice(b + 1)) === piece) return b;
  }
  const to = out.findIndex((d, b) => prod(out.slice(0, b)) === before && d > 1);
  const what = v.origin === undefined ? (v.name ?? `value %${id}`) : `the output of ${v.origin}`;
  throw new PlanError(
    "tp-indivisible",
    `${what} [${v.shape.join(", ")}] is reshaped to [${out.join(", ")}]: its split axis ${a} (${v.shape[a]}) ` +
      `falls on an axis of ${out[to] ?? "?"}, which does not divide into ${c.ranks} shards`,
    { value: id },
  );
}

function updateSlice(c: RuleContext, ins: readonly Operand[], allWhole: () => RuleResult): RuleResult {
  const [x, u] = [ins[0] as number, ins[1] as number];
  const sx = c.value(x).sharding,
    su = c.value(u).sharding;
  if (sx.kind === "partial" || su.kind === "partial") return allWhole();
  const a = su.kind === "split" ? su.axis : sx.kind === "split" ? sx.axis : null;
  if (a === null) return allWhole();
  const starts = ins.slice(2).map((o) => (isLiteral(o) ? o : c.whole(o)));
  if (!c.isZero(starts[a]!) || c.value(u).shape[a] !== c.value(x).shape[a]) return allWhole();
  return { inputs: [c.split(x, a), c.split(u, a), ...starts], sharding: split(a) };
}

function matmul(c: RuleContext, a: number, b: number, ro: number): RuleResult {
  const va = c.value(a),
    vb = c.value(b);
  const ra = va.shape.length,
    rb = vb.shape.length;
  if (va.sharding.kind === "partial") return { inputs: [a, c.whole(b)], sharding: PARTIAL };
  if (vb.sharding.kind === "partial") return { inputs: [c.whole(a), b], sharding: PARTIAL };
  const sa = va.sharding.kind === "split" ? va.sharding.axis : null;
  const sb = vb.sharding.kind === "split" ? vb.sharding.axis : null;
  if (sa === ra - 1) return { inputs: [a, c.split(b, rb - 2)], sharding: PARTIAL };
  if (sb === rb - 2) return { inputs: [c.split(a, ra - 1), b], sharding: PARTIAL };
  if (sa === ra - 2) return { inputs: [a, c.whole(b)], sharding: split(ro - 2) };
  // A batch axis: the other operand splits there too unless it broadcasts (size 1 or absent).
  const batch = (o: number, other: number, ro2: number): RuleResult => {
    const v = c.value(other);
    const ax = o - (ro2 - v.shape.length);
    const conv = ax >= 0 && v.shape[ax] !== 1 ? c.split(other, ax) : c.whole(other);
    return { inputs: [conv], sharding: split(o) };
  };
  if (sa !== null) {
    const r = batch(sa + ro - ra, b, ro);
    return { inputs: [a, r.inputs[0]!], sharding: r.sharding };
  }
  if (sb === rb - 1) return { inputs: [c.whole(a), b], sharding: split(ro - 1) };
  const r = batch(sb! + ro - rb, a, ro);
  return { inputs: [r.inputs[0]!, b], sharding: r.sharding };
}

const LINEAR_UNARY = new Set(["Neg"]);

function elementwise(c: RuleContext, op: string, ins: readonly Operand[], ro: number): RuleResult {
  const kind = (o: Operand) => (isLiteral(o) ? "whole" : c.value(o).sharding.kind);
  const parts = ins.filter((o) => kind(o) === "partial").length;
  const others = ins.filter((o) => kind(o) !== "partial");
  const linear =
    ((op === "Add" || op === "Sub") && parts === ins.length) ||
    (LINEAR_UNARY.has(op) && ins.length === 1) ||
    (op === "Mul" && parts === 1 && others.every((o) => kind(o) === "whole")) ||
    (op === "Div" && parts === 1 && kind(ins[0]!) === "partial" && kind(ins[1]!) === "whole");
  if (parts > 0 && linear) return { inputs: ins, sharding: PARTIAL };
  let cur = ins.map((o) => (kind(o) === "partial" ? c.whole(o as number) : o));
  const first = cur.find((o) => kind(o) === "split") as number | undefined;
  if (first === undefined) return { inputs: cur, sharding: WHOLE };
  const f = c.value(first);
  const target = (f.sharding as { axis: number }).axis + ro - f.shape.length;
  cur = cur.map((o) => {
    if (isLiteral(o)) return o;
    const v = c.value(o);
    const a = target - (ro - v.shape.length);
    return a >= 0 && v.shape[a] !== 1 ? c.split(o, a) : c.whole(o);
  });
  return { inputs: cur, sharding: split(target) };
}

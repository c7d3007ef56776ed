// RoPE recognition: the rotate-half chain x*cos + concat(-x2, x1)*sin becomes one Rope. A chain that
// has the rotate-half concat but fails a later check is reported with that check.

import { isLiteral, type Eqn, type ValueId } from "@poot/graph-ir";
import type { Rewrite, Rule, RuleContext } from "../rules.js";
import { defIs } from "./match.js";

type Fail = { check: string; detail: string };

function halves(cx: RuleContext, e: Eqn | undefined, d: number, upper: boolean): ValueId | Fail {
  const what = upper ? "second" : "first";
  if (e === undefined || e.op !== "Slice")
    return { check: "half-slices", detail: `the ${what} concat part is not a slice of x` };
  const src = cx.draft.values[e.inputs[0] as number]!;
  const r = src.shape.length;
  const st = e.params.start as number[],
    en = e.params.end as number[],
    sp = e.params.step as number[];
  const ok =
    sp.every((s) => s === 1) &&
    st.every((s, i) => (i === r - 1 ? s === (upper ? d / 2 : 0) : s === 0)) &&
    en.every((x, i) => (i === r - 1 ? x === (upper ? d : d / 2) : x === src.shape[i]));
  return ok
    ? (e.inputs[0] as number)
    : {
        check: "half-slices",
        detail: `the ${what} part does not take x[..., ${upper ? `${d / 2}:${d}` : `0:${d / 2}`}]`,
      };
}

function match(cx: RuleContext, e: Eqn): { x: ValueId; cos: ValueId; sin: ValueId } | Fail | null {
  const d = cx.draft;
  const [a, b] = e.inputs;
  const ma = defIs(d, a, "Mul"),
    mb = defIs(d, b, "Mul");
  if (ma === undefined || mb === undefined) return null;
  // Find the Mul with a rotate-half Concat operand: that is what makes this a near match.
  let rotMul: Eqn | undefined,
    rotSide = 0,
    concat: Eqn | undefined;
  for (const m of [ma, mb])
    for (let s = 0; s < 2; s++) {
      const c = defIs(d, m.inputs[s], "Concat");
      if (c !== undefined && concat === undefined) {
        rotMul = m;
        rotSide = s;
        concat = c;
      }
    }
  if (concat === undefined || rotMul === undefined) return null;
  const out = d.values[e.out]!;
  const D = out.shape[out.shape.length - 1]!;
  const ax = concat.params.axis as number;
  if (concat.inputs.length !== 2 || (ax !== -1 && ax !== out.shape.length - 1))
    return { check: "rotate-concat", detail: "the concat does not join two halves on the last axis" };
  if (D % 2 !== 0) return { check: "rotate-concat", detail: `last dim ${D} is odd` };
  const neg = defIs(d, concat.inputs[0], "Neg");
  if (neg === undefined)
    return {
      check: "neg-second-half",
      detail: "rotate_half negates the second half and puts it first; the first concat part is not a negation",
    };
  const x2 = halves(cx, defOf(d, neg.inputs[0]), D, true);
  if (typeof x2 !== "number") return x2;
  const x1 = halves(cx, defOf(d, concat.inputs[1]), D, false);
  if (typeof x1 !== "number") return x1;
  if (x1 !== x2) return { check: "same-x", detail: `the halves come from different tensors (%${x2}, %${x1})` };
  const xMul = rotMul === ma ? mb : ma;
  const xSide = xMul.inputs[0] === x1 ? 0 : xMul.inputs[1] === x1 ? 1 : -1;
  if (xSide < 0) return { check: "same-x", detail: "x * cos does not multiply the tensor that was rotated" };
  const cos = xMul.inputs[1 - xSide]!,
    sin = rotMul.inputs[1 - rotSide]!;
  if (isLiteral(cos) || isLiteral(sin)) return { check: "tables", detail: "cos/sin are literals, not tables" };
  const xv = d.values[x1]!;
  for (const t of [cos, sin]) {
    const tv = d.values[t]!;
    const pad = xv.shape.length - tv.shape.length;
    if (pad < 0 || tv.shape[tv.shape.length - 1] !== D || tv.shape.some((s, i) => s !== 1 && s !== xv.shape[pad + i]))
      return { check: "tables", detail: `table %${t} [${tv.shape.join(",")}] does not broadcast to x` };
  }
  for (const m of [ma, mb, e, neg]) {
    if (d.values[m.out]!.dtype !== out.dtype) return { check: "compute-dtype", detail: "the chain mixes dtypes" };
  }
  return { x: x1, cos, sin };
}

function defOf(d: RuleContext["draft"], o: Eqn["inputs"][number] | undefined): Eqn | undefined {
  return o === undefined || isLiteral(o) ? undefined : d.def(o);
}

/** Rotate-half RoPE recognition (rooted at the final Add). */
export const ropeRule: Rule = {
  name: "rope",
  ops: ["Add"],
  apply(_k, e, cx): Rewrite | null {
    const m = match(cx, e);
    if (m === null) return null;
    const v = cx.draft.values[e.out]!;
    if ("check" in m) {
      cx.decline({
        pattern: "rope",
        value: e.out,
        ...(v.name === undefined ? {} : { name: v.name }),
        check: m.check,
        detail: m.detail,
      });
      return null;
    }
    return {
      kind: "replace",
      eqn: { op: "Rope", inputs: [m.x, m.cos, m.sin], params: { style: "half", dtype: v.dtype as string }, out: e.out },
    };
  },
};

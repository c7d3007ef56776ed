// RoPE recognition: the rotate-half chain x*cos + concat(-x2, x1)*sin, and the interleaved chain
// x*cos + reshape(concat(-x[..., :, 1:2], x[..., :, 0:1]))*sin over x viewed as [..., D/2, 2] (graph-ir's
// ropeInterleaved), become one Rope. A chain that has the rotation concat but fails a later check is reported
// with that check.

import { isLiteral, type Eqn, type ValueId } from "@poot/graph-ir";
import type { Rewrite, Rule, RuleContext } from "../rules.js";
import { defIs, defOf } from "./match.js";

type Fail = { check: string; detail: string };

/** Whether the Slice `e` takes [from, to) of its input's last axis, whole along every other axis, step 1. */
function takesLastAxis(cx: RuleContext, e: Eqn, from: number, to: number): boolean {
  const shape = cx.draft.values[e.inputs[0] as number]!.shape;
  const last = shape.length - 1;
  const st = e.params.start as number[],
    en = e.params.end as number[],
    sp = e.params.step as number[];
  return (
    sp.every((s) => s === 1) &&
    st.every((s, i) => s === (i === last ? from : 0)) &&
    en.every((x, i) => x === (i === last ? to : shape[i]))
  );
}

function halves(cx: RuleContext, e: Eqn | undefined, d: number, upper: boolean): ValueId | Fail {
  const what = upper ? "second" : "first";
  if (e === undefined || e.op !== "Slice")
    return { check: "half-slices", detail: `the ${what} concat part is not a slice of x` };
  return takesLastAxis(cx, e, upper ? d / 2 : 0, upper ? d : d / 2)
    ? (e.inputs[0] as number)
    : {
        check: "half-slices",
        detail: `the ${what} part does not take x[..., ${upper ? `${d / 2}:${d}` : `0:${d / 2}`}]`,
      };
}

/** One component of x viewed as pairs [..., D/2, 2]: the slice taking index `at` of the pair axis. */
function pairPart(cx: RuleContext, e: Eqn | undefined, at: number): ValueId | Fail {
  const what = at === 0 ? "even" : "odd";
  const fail: Fail = {
    check: "pair-slices",
    detail: `the ${what} concat part does not take x[..., :, ${at}:${at + 1}]`,
  };
  if (e === undefined || e.op !== "Slice") return fail;
  const src = cx.draft.values[e.inputs[0] as number]!;
  if (src.shape[src.shape.length - 1] !== 2 || !takesLastAxis(cx, e, at, at + 1)) return fail;
  const view = defIs(cx.draft, e.inputs[0], "Reshape");
  return view === undefined
    ? { check: "pair-slices", detail: `the ${what} part is not a slice of x viewed as pairs` }
    : (view.inputs[0] as number);
}

/** x of the rotation concat: the halves of x (rotate-half) or the pairs of x (interleaved). */
function rotated(cx: RuleContext, concat: Eqn, D: number, interleaved: boolean): ValueId | Fail {
  const d = cx.draft;
  const neg = defIs(d, concat.inputs[0], "Neg");
  if (neg === undefined)
    return {
      check: "neg-second-half",
      detail:
        "the rotation negates the second element of each pair and puts it first; the first concat part is not a negation",
    };
  const second = interleaved ? pairPart(cx, defOf(d, neg.inputs[0]), 1) : halves(cx, defOf(d, neg.inputs[0]), D, true);
  if (typeof second !== "number") return second;
  const first = interleaved
    ? pairPart(cx, defOf(d, concat.inputs[1]), 0)
    : halves(cx, defOf(d, concat.inputs[1]), D, false);
  if (typeof first !== "number") return first;
  if (first !== second)
    return { check: "same-x", detail: `the parts come from different tensors (%${second}, %${first})` };
  if (d.values[neg.out]!.dtype !== d.values[concat.out]!.dtype)
    return { check: "compute-dtype", detail: "the chain mixes dtypes" };
  return first;
}

type Match = { x: ValueId; cos: ValueId; sin: ValueId; style: "half" | "interleaved" };

function match(cx: RuleContext, e: Eqn): Match | Fail | null {
  const d = cx.draft;
  const [a, b] = e.inputs;
  const ma = defIs(d, a, "Mul"),
    mb = defIs(d, b, "Mul");
  if (ma === undefined || mb === undefined) return null;
  // Find the Mul with a rotation Concat operand (direct: rotate-half; under a Reshape: interleaved pairs).
  let rotMul: Eqn | undefined,
    rotSide = 0,
    concat: Eqn | undefined,
    interleaved = false;
  for (const m of [ma, mb])
    for (let s = 0; s < 2; s++) {
      if (concat !== undefined) continue;
      const view = defIs(d, m.inputs[s], "Reshape");
      const c = defIs(d, view === undefined ? m.inputs[s] : view.inputs[0], "Concat");
      if (c !== undefined) {
        rotMul = m;
        rotSide = s;
        concat = c;
        interleaved = view !== undefined;
      }
    }
  if (concat === undefined || rotMul === undefined) return null;
  const out = d.values[e.out]!;
  const D = out.shape[out.shape.length - 1]!;
  const ax = concat.params.axis as number;
  const cr = d.values[concat.out]!.shape.length;
  if (concat.inputs.length !== 2 || (ax !== -1 && ax !== cr - 1))
    return { check: "rotate-concat", detail: "the concat does not join two parts on the last axis" };
  if (D % 2 !== 0) return { check: "rotate-concat", detail: `last dim ${D} is odd` };
  const x1 = rotated(cx, concat, D, interleaved);
  if (typeof x1 !== "number") return x1;
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
  const same = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((s, i) => s === b[i]);
  if (!same(xv.shape, out.shape)) return { check: "same-x", detail: "the rotated x does not have the output's shape" };
  // Interleaved: the pair view splits only the last axis, and the rotation is viewed back as x.
  const pairShape = [...xv.shape.slice(0, -1), D / 2, 2];
  if (
    interleaved &&
    !(same(d.values[concat.out]!.shape, pairShape) && same(d.values[rotMul.inputs[rotSide] as number]!.shape, xv.shape))
  )
    return { check: "pair-slices", detail: `the pairs are not x viewed as [${pairShape.join(",")}]` };
  for (const m of [ma, mb, e]) {
    if (d.values[m.out]!.dtype !== out.dtype) return { check: "compute-dtype", detail: "the chain mixes dtypes" };
  }
  return { x: x1, cos, sin, style: interleaved ? "interleaved" : "half" };
}

/** RoPE recognition, rotate-half or interleaved (rooted at the final Add). */
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
      eqn: {
        op: "Rope",
        inputs: [m.x, m.cos, m.sin],
        params: { style: m.style, dtype: v.dtype as string },
        out: e.out,
      },
    };
  },
};

// canonicalize: identity removal and view chain folding. Rewrites that could change a result's bits
// (x + 0 and division by a non-power-of-two constant) are declined and reported.

import { isLiteral, shapeEquals, type Eqn } from "@poot/graph-ir";
import type { Pass, Rewrite, Rule, RuleContext } from "../rules.js";
import { defIs, isScalar, scalarOf } from "./match.js";

const sameShapeAsOut = (cx: RuleContext, e: Eqn, o: Eqn["inputs"][number]): boolean =>
  !isLiteral(o) && shapeEquals(cx.draft.values[o]!.shape, cx.draft.values[e.out]!.shape);

const fwd = (o: Eqn["inputs"][number]): Rewrite => ({ kind: "forward", to: o as number });

const rules: Rule[] = [
  {
    name: "identity-cast",
    ops: ["Cast"],
    apply: (_k, e, cx) =>
      !isLiteral(e.inputs[0]!) && cx.draft.values[e.inputs[0] as number]!.dtype === e.params.to
        ? fwd(e.inputs[0]!)
        : null,
  },
  {
    // x * 1 is x for every x (NaN, -0 included); only when x already has the output's shape.
    name: "mul-one",
    ops: ["Mul"],
    apply(_k, e, cx) {
      const [a, b] = e.inputs;
      if (isScalar(cx.draft, b, 1) && sameShapeAsOut(cx, e, a!)) return fwd(a!);
      if (isScalar(cx.draft, a, 1) && sameShapeAsOut(cx, e, b!)) return fwd(b!);
      return null;
    },
  },
  {
    name: "sub-zero",
    ops: ["Sub"],
    apply: (_k, e, cx) =>
      isScalar(cx.draft, e.inputs[1], 0) && sameShapeAsOut(cx, e, e.inputs[0]!) ? fwd(e.inputs[0]!) : null,
  },
  {
    name: "add-zero",
    ops: ["Add"],
    apply(_k, e, cx) {
      const [a, b] = e.inputs;
      const zeroSide = isScalar(cx.draft, b, 0) ? a : isScalar(cx.draft, a, 0) ? b : undefined;
      const dt = cx.draft.values[e.out]!.dtype;
      // -0 + 0 is +0, so dropping the add changes the sign of zero results: not proved exact.
      if (zeroSide !== undefined && (dt === "f32" || dt === "f16" || dt === "bf16"))
        cx.numericalDecline("add-zero", e.out, "signed-zero", "x + 0 -> x would keep -0 where the graph produces +0");
      else if (zeroSide !== undefined && sameShapeAsOut(cx, e, zeroSide)) return fwd(zeroSide);
      return null;
    },
  },
  {
    name: "div-by-constant",
    ops: ["Div"],
    apply(_k, e, cx) {
      const c = scalarOf(cx.draft, e.inputs[1]);
      const dt = cx.draft.values[e.out]!.dtype;
      if (c === undefined || !(dt === "f32" || dt === "f16" || dt === "bf16") || !isLiteral(e.inputs[1]!)) return null;
      const lit = e.inputs[1];
      const m = Math.log2(Math.abs(c));
      // x / 2^k and x * 2^-k round the same real number; any other divisor's reciprocal is itself rounded.
      if (Number.isInteger(m) && Math.abs(m) < 100)
        return { kind: "replace", eqn: { ...e, op: "Mul", inputs: [e.inputs[0]!, { lit: 1 / c, dtype: lit.dtype }] } };
      cx.numericalDecline("div-by-constant", e.out, "inexact-reciprocal", `x / ${c} -> x * (1/${c}) rounds 1/${c}`);
      return null;
    },
  },
  {
    name: "neg-neg",
    ops: ["Neg"],
    apply: (_k, e, cx) => {
      const p = defIs(cx.draft, e.inputs[0], "Neg");
      return p === undefined ? null : fwd(p.inputs[0]!);
    },
  },
  {
    name: "cast-roundtrip",
    ops: ["Cast"],
    apply(_k, e, cx) {
      const p = defIs(cx.draft, e.inputs[0], "Cast");
      if (p === undefined || isLiteral(p.inputs[0]!)) return null;
      const src = cx.draft.values[p.inputs[0] as number]!.dtype;
      if (src === "f32" && (p.params.to === "bf16" || p.params.to === "f16") && e.params.to === "f32") {
        cx.numericalDecline(
          "cast-roundtrip",
          e.out,
          "narrowing-cast",
          `f32 -> ${String(p.params.to)} -> f32 rounds; it is kept`,
        );
      }
      return null;
    },
  },
  {
    name: "reshape-chain",
    ops: ["Reshape"],
    apply(_k, e, cx) {
      if (sameShapeAsOut(cx, e, e.inputs[0]!)) return fwd(e.inputs[0]!);
      const p = defIs(cx.draft, e.inputs[0], "Reshape");
      return p === undefined ? null : { kind: "replace", eqn: { ...e, inputs: [p.inputs[0]!] } };
    },
  },
  {
    name: "transpose-chain",
    ops: ["Transpose"],
    apply(_k, e, cx) {
      const perm = e.params.perm as number[];
      if (perm.every((a, i) => a === i)) return fwd(e.inputs[0]!);
      const p = defIs(cx.draft, e.inputs[0], "Transpose");
      if (p === undefined) return null;
      const inner = p.params.perm as number[];
      return { kind: "replace", eqn: { ...e, inputs: [p.inputs[0]!], params: { perm: perm.map((a) => inner[a]!) } } };
    },
  },
  {
    name: "identity-broadcast",
    ops: ["Broadcast"],
    apply: (_k, e, cx) => (sameShapeAsOut(cx, e, e.inputs[0]!) ? fwd(e.inputs[0]!) : null),
  },
  {
    name: "identity-slice",
    ops: ["Slice"],
    apply: (_k, e, cx) =>
      sameShapeAsOut(cx, e, e.inputs[0]!) && (e.params.step as number[]).every((s) => s === 1)
        ? fwd(e.inputs[0]!)
        : null,
  },
];

/** The canonicalize pass. */
export const canonicalize: Pass = {
  name: "canonicalize",
  numerics: "declined-unless-proved",
  doc: "identities and view chains; x+0 and x/c (c not 2^k) declined",
  rules,
};

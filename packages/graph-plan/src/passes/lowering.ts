// Lowering passes before fusion: packed contraction / row-gather recognition, legalization against the
// target's caps, dense BF16 recognition (exact widening casts folded into contractions), argmax staging.

import { isLiteral, isPacked, type Eqn, type Params, type ValueId } from "@poot/graph-ir";
import { planLimits } from "../target.js";
import type { Pass, Rule, RuleContext } from "../rules.js";
import { deadEquation } from "./dce.js";
import { defIs, peelWiden } from "./match.js";

/** B operand of a MatMul read as the transpose of a stored [.., N, K] tensor, when it is one. */
function transposedB(cx: RuleContext, b: ValueId): ValueId | undefined {
  const t = defIs(cx.draft, b, "Transpose");
  if (t === undefined) return undefined;
  const perm = t.params.perm as number[];
  const r = perm.length;
  return perm.every((p, i) => p === (i === r - 2 ? r - 1 : i === r - 1 ? r - 2 : i))
    ? (t.inputs[0] as number)
    : undefined;
}

// ── packed contraction / row gather ──
const packedRules: Rule[] = [
  {
    name: "packed-row-gather",
    ops: ["DecodePacked"],
    apply(_k, e, cx) {
      const g = defIs(cx.draft, e.inputs[0], "Gather");
      if (g === undefined || g.params.axis !== 0 || !isPacked(cx.draft.values[g.inputs[0] as number]!.dtype))
        return null;
      return {
        kind: "replace",
        eqn: { op: "PackedRowGather", inputs: [g.inputs[0]!, g.inputs[1]!], params: {}, out: e.out },
      };
    },
  },
  {
    name: "packed-contraction",
    ops: ["MatMul"],
    apply(_k, e, cx) {
      const w = transposedB(cx, e.inputs[1] as number);
      const dec = w === undefined ? undefined : defIs(cx.draft, w, "DecodePacked");
      if (dec === undefined) return null;
      const acc = cx.draft.values[e.out]!.dtype as string;
      return {
        kind: "replace",
        eqn: {
          op: "PackedContraction",
          inputs: [peelWiden(cx.draft, e.inputs[0] as number), dec.inputs[0]!],
          params: { transposeB: true, accDtype: acc, epilogue: null },
          out: e.out,
        },
      };
    },
  },
  deadEquation,
];

/** The packed recognition pass. */
export const packed: Pass = {
  name: "packed",
  numerics: "exact",
  doc: "DecodePacked feeding MatMul / Gather becomes PackedContraction / PackedRowGather",
  rules: packedRules,
  reverse: true,
};

// ── legalization ──
const legalizeRules: Rule[] = [
  {
    // A Concat binds every input: split it when it would need more bindings than the device allows.
    name: "split-concat",
    ops: ["Concat"],
    apply(_k, e, cx) {
      const max = planLimits(cx.target).maxStorageBuffers - 1;
      if (e.inputs.length <= max || max < 2) return null;
      const d = cx.draft;
      const head = e.inputs.slice(0, max - 1),
        tail = e.inputs.slice(max - 1);
      const ax = e.params.axis as number;
      const tv = tail.map((o) => d.values[o as number]!);
      const r = tv[0]!.shape.length,
        a = ax < 0 ? ax + r : ax;
      const shape = tv[0]!.shape.map((s, i) => (i === a ? tv.reduce((acc, t) => acc + t.shape[i]!, 0) : s));
      const mid = d.addValue(tv[0]!.dtype, shape, { kind: "device" });
      const inner: Eqn = { op: "Concat", inputs: tail, params: e.params, out: mid };
      return { kind: "replace", eqn: { ...e, inputs: [...head, mid] }, before: [inner] };
    },
  },
];

/** The legalization pass. */
export const legalize: Pass = {
  name: "legalize",
  numerics: "exact",
  doc: "split ops that exceed the target's binding limit",
  rules: legalizeRules,
};

// ── dense BF16 recognition ──
const bf16Rules: Rule[] = [
  {
    // Widening f16/bf16 -> f32 is exact, so a contraction may read the narrow operand and widen in registers.
    name: "widening-contraction",
    ops: ["MatMul"],
    apply(_k, e, cx) {
      const d = cx.draft;
      const a = peelWiden(d, e.inputs[0] as number);
      const tb = transposedB(cx, e.inputs[1] as number);
      const b = tb === undefined ? peelWiden(d, e.inputs[1] as number) : peelWiden(d, tb);
      const acc = d.values[e.out]!.dtype as string;
      return {
        kind: "replace",
        eqn: {
          op: "ContractionEpilogue",
          inputs: [a, b],
          params: { transposeB: tb !== undefined, accDtype: acc, epilogue: null },
          out: e.out,
        },
      };
    },
  },
  deadEquation,
];

/** The dense BF16 recognition pass. */
export const denseBf16: Pass = {
  name: "dense-bf16",
  numerics: "exact",
  doc: "MatMul over widened bf16/f16 (and transposed) operands becomes ContractionEpilogue reading them directly",
  rules: bf16Rules,
  reverse: true,
};

// ── reduction and dtype preparation ──
const reductionRules: Rule[] = [
  {
    name: "two-stage-argmax",
    ops: ["Reduce"],
    apply(_k, e, cx) {
      const d = cx.draft;
      if (e.params.kind !== "argmax" || isLiteral(e.inputs[0]!)) return null;
      const x = d.values[e.inputs[0] as number]!;
      const r = x.shape.length,
        axes = e.params.axes as number[];
      const n = x.shape[r - 1]!;
      if (!(axes[0] === -1 || axes[0] === r - 1) || n <= cx.options.argmaxSplitAbove) return null;
      const chunk = cx.options.argmaxChunk;
      const cand = d.addValue(
        "i32",
        [...x.shape.slice(0, -1), Math.ceil(n / chunk)],
        { kind: "device" },
        x.name === undefined ? undefined : `${x.name}.argmax_chunks`,
      );
      const stage1: Eqn = { op: "ArgMaxChunk", inputs: [e.inputs[0]!], params: { chunk }, out: cand };
      if (e.params.keepdim !== true)
        return {
          kind: "replace",
          eqn: { op: "ArgMaxCombine", inputs: [e.inputs[0]!, cand], params: {} as Params, out: e.out },
          before: [stage1],
        };
      const flat = d.addValue("i32", x.shape.slice(0, -1), { kind: "device" });
      const stage2: Eqn = { op: "ArgMaxCombine", inputs: [e.inputs[0]!, cand], params: {}, out: flat };
      return {
        kind: "replace",
        eqn: { op: "Reshape", inputs: [flat], params: { shape: [...d.values[e.out]!.shape] }, out: e.out },
        before: [stage1, stage2],
      };
    },
  },
];

/** The reduction and dtype preparation pass. */
export const reductionPrep: Pass = {
  name: "reduction-prep",
  numerics: "exact",
  doc: "argmax over a long last axis runs as chunk + combine stages",
  rules: reductionRules,
};

// cse: equal equations over equal operands compute equal values (every op is pure), and equal
// Computed constants are one constant: each RoPE table exists once and is gathered once per step.

import { createHash } from "node:crypto";
import { dtypeName, isLiteral, type Eqn, type Operand, type ValueId } from "@poot/graph-ir";
import type { Draft } from "../draft.js";
import type { Pass, Rule } from "../rules.js";

function operandKey(o: Operand): string {
  return isLiteral(o) ? `${o.dtype}:${Object.is(o.lit, -0) ? "-0" : String(o.lit)}` : `%${o}`;
}

/** Canonical id of each Computed value: the first one with the same dtype, shape and bytes. */
function computedCanon(d: Draft): Map<ValueId, ValueId> {
  const byKey = new Map<string, ValueId>();
  const canon = new Map<ValueId, ValueId>();
  for (const v of d.values) {
    if (v.storage.kind !== "computed") continue;
    const data = v.storage.data;
    const h = createHash("sha256").update(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)).digest("hex");
    const key = `${dtypeName(v.dtype)}[${v.shape.join(",")}]${data.constructor.name}:${h}`;
    const first = byKey.get(key);
    if (first === undefined) byKey.set(key, v.id);
    else canon.set(v.id, first);
  }
  return canon;
}

const rules: Rule[] = [
  {
    name: "computed-constant", ops: "*",
    apply(_k, e: Eqn, cx) {
      let canon = cx.scratch.get("canon") as Map<ValueId, ValueId> | undefined;
      if (canon === undefined) cx.scratch.set("canon", (canon = computedCanon(cx.draft)));
      if (!e.inputs.some((o) => !isLiteral(o) && canon!.has(o))) return null;
      return { kind: "replace", eqn: { ...e, inputs: e.inputs.map((o) => (!isLiteral(o) && canon!.has(o) ? canon!.get(o)! : o)) } };
    },
  },
  {
    name: "common-subexpression", ops: "*",
    apply(_k, e, cx) {
      let seen = cx.scratch.get("seen") as Map<string, ValueId> | undefined;
      if (seen === undefined) cx.scratch.set("seen", (seen = new Map()));
      const key = `${e.op}(${e.inputs.map(operandKey).join(",")})${JSON.stringify(e.params)}`;
      const prev = seen.get(key);
      if (prev === undefined || prev === e.out) {
        seen.set(key, e.out);
        return null;
      }
      return { kind: "forward", to: prev };
    },
  },
];

/** The CSE pass. */
export const cse: Pass = { name: "cse", numerics: "exact", doc: "merge equal equations and equal computed constants", rules };

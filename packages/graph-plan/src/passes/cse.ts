// cse: equal equations over equal operands compute equal values (every op is pure), and equal
// Computed constants are one constant: each RoPE table exists once and is gathered once per step.

import { dtypeName, isLiteral, type Eqn, type Operand, type ValueId } from "@poot/graph-ir";
import type { Draft } from "../draft.js";
import type { Pass, Rule } from "../rules.js";

function operandKey(o: Operand): string {
  return isLiteral(o) ? `${o.dtype}:${Object.is(o.lit, -0) ? "-0" : String(o.lit)}` : `%${o}`;
}

/** FNV-1a over bytes: a bucket key only (equal bytes are then compared), so it needs no cryptographic strength. */
function fnv1a(b: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  return h >>> 0;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Canonical id of each Computed value: the first one with the same dtype, shape and bytes (portable: no node:crypto). */
function computedCanon(d: Draft): Map<ValueId, ValueId> {
  const buckets = new Map<string, { id: ValueId; bytes: Uint8Array }[]>();
  const canon = new Map<ValueId, ValueId>();
  for (const v of d.values) {
    if (v.storage.kind !== "computed") continue;
    const data = v.storage.data;
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    const key = `${dtypeName(v.dtype)}[${v.shape.join(",")}]${data.constructor.name}:${fnv1a(bytes)}`;
    const bucket = buckets.get(key) ?? [];
    const first = bucket.find((c) => sameBytes(c.bytes, bytes));
    if (first === undefined) buckets.set(key, [...bucket, { id: v.id, bytes }]);
    else canon.set(v.id, first.id);
  }
  return canon;
}

const rules: Rule[] = [
  {
    name: "computed-constant",
    ops: "*",
    apply(_k, e: Eqn, cx) {
      // Computed values do not change during CSE, so their hashes are taken once per pass.
      let canon = cx.passScratch.get("canon") as Map<ValueId, ValueId> | undefined;
      if (canon === undefined) cx.passScratch.set("canon", (canon = computedCanon(cx.draft)));
      if (!e.inputs.some((o) => !isLiteral(o) && canon!.has(o))) return null;
      return {
        kind: "replace",
        eqn: { ...e, inputs: e.inputs.map((o) => (!isLiteral(o) && canon!.has(o) ? canon!.get(o)! : o)) },
      };
    },
  },
  {
    name: "common-subexpression",
    ops: "*",
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
export const cse: Pass = {
  name: "cse",
  numerics: "exact",
  doc: "merge equal equations and equal computed constants",
  rules,
};

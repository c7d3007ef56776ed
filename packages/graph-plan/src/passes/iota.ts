// iota-folding: Iota equations and equations over compile-time constants only become Computed values,
// evaluated with the reference semantics (so folding is exact with respect to the oracle).

import {
  isLiteral,
  isPacked,
  numel,
  opContext,
  roundInPlace,
  tensorFromHost,
  type Eqn,
  type IotaParams,
  type ScalarDType,
  type StoredData,
  type Tensor,
  type TensorData,
} from "@poot/graph-ir";
import { f32ToBf16Bits, f32ToF16Bits } from "@poot/graph-ir";
import type { Draft } from "../draft.js";
import type { Pass, Rule, RuleContext } from "../rules.js";

/** Converts evaluator data to the storage array Computed values hold. */
function toStored(dtype: ScalarDType, data: TensorData): StoredData {
  switch (dtype) {
    case "f32":
      return Float32Array.from(data as Float64Array);
    case "f16":
      return Uint16Array.from(data as Float64Array, (x) => f32ToF16Bits(x));
    case "bf16":
      return Uint16Array.from(data as Float64Array, (x) => f32ToBf16Bits(x));
    case "i32":
      return Int32Array.from(data);
    case "u32":
      return Uint32Array.from(data);
    case "u8":
    case "bool":
      return Uint8Array.from(data);
    default:
      return dtype satisfies never;
  }
}

function constTensor(d: Draft, o: Eqn["inputs"][number]): Tensor | undefined {
  if (isLiteral(o)) return tensorFromHost(o.dtype, [], [o.lit]) ?? undefined;
  const v = d.values[o]!;
  if (v.storage.kind !== "computed" || isPacked(v.dtype)) return undefined;
  return tensorFromHost(v.dtype, v.shape, v.storage.data) ?? undefined;
}

function fold(k: number, e: Eqn, cx: RuleContext): boolean {
  const d = cx.draft;
  const out = d.values[e.out]!;
  if (isPacked(out.dtype) || numel(out.shape) > cx.options.maxFoldElements) return false;
  const def = d.ops[e.op]!;
  if (def.category === "composite" || (def.category === "linalg" && e.op !== "Iota")) return false;
  // Check storage first: converting a large table to a tensor only to find a per-step input is wasted work.
  if (
    !e.inputs.every((o) => isLiteral(o) || (d.values[o]!.storage.kind === "computed" && !isPacked(d.values[o]!.dtype)))
  )
    return false;
  const inputs: Tensor[] = [];
  for (const o of e.inputs) {
    const t = constTensor(d, o);
    if (t === undefined) return false;
    inputs.push(t);
  }
  let data = def.evaluate(inputs, e.params, out, opContext(e.op, [e.out], k));
  if (inputs.some((t) => t.data === data)) data = data.slice();
  roundInPlace(out.dtype, data);
  d.setStorage(e.out, { kind: "computed", data: toStored(out.dtype, data) });
  return true;
}

const rules: Rule[] = [
  {
    name: "iota",
    ops: ["Iota"],
    apply(k, e, cx) {
      if (!fold(k, e, cx)) return null;
      // Recognizers still need to know a folded value counts positions along an axis.
      cx.draft.iotaOf.set(e.out, e.params as unknown as IotaParams);
      return { kind: "remove" };
    },
  },
  {
    name: "constant",
    ops: "*",
    apply: (k, e, cx) => (e.inputs.length > 0 && e.op !== "Iota" && fold(k, e, cx) ? { kind: "remove" } : null),
  },
];

/** The iota-folding pass. */
export const iotaFolding: Pass = {
  name: "iota-folding",
  numerics: "exact",
  doc: "Iota and all-constant equations become Computed values (eval semantics)",
  rules,
};

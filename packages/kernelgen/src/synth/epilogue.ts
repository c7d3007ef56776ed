// Epilogues of contractions (GEMV, GEMM, dequant GEMV): an expression DAG over the accumulator (leaf `acc`; `acc1`,
// `acc2`, ... for further weights sharing x) and extra operands per output column (bias) or element (residual).

import type { Arr, Builder, Val } from "@poot/kernel-dsl";
import { KernelgenError } from "../errors.js";
import { emitNodes, typeNodes } from "./expr.js";
import type { ExprNode, ExprType } from "./expr.js";
import { checkDType, elemOf, loadAs, valueTypeOf } from "./storage.js";
import type { StorageDType } from "./storage.js";

/** An extra epilogue operand: `col` = one value per output column [N], `element` = one per output element [M, N]. */
export interface EpilogueInput {
  readonly name: string;
  readonly dtype: StorageDType;
  readonly kind: "col" | "element";
}

/** The epilogue: nodes over `acc` (f32) and the inputs; `node` is what is stored (default: the accumulator). */
export interface Epilogue {
  readonly inputs: readonly EpilogueInput[];
  readonly nodes: readonly ExprNode[];
  readonly node: number;
}

/** A checked epilogue ready to emit. */
export interface PreparedEpilogue {
  /** Declares the epilogue's buffers (call once, after the contraction's own buffers). */
  declare(b: Builder): void;
  /** Emits the epilogue for output element (row, col) at linear index `idx` from its accumulator(s); returns the value to store. */
  apply(b: Builder, acc: Val<"f32"> | readonly Val<"f32">[], col: Val<"u32">, idx: Val<"u32">): Val<ExprType>;
  /** Expression type of the result. */
  readonly type: ExprType;
}

/** Validates `ep` against the output dtype; `undefined` = store the accumulator as is. */
export function prepareEpilogue(synth: string, ep: Epilogue | undefined, outDtype: StorageDType): PreparedEpilogue {
  checkDType(synth, "out", outDtype);
  if (ep === undefined) {
    if (valueTypeOf(outDtype) !== "f32")
      throw new KernelgenError(
        "bad_dtype",
        `an ${outDtype} output needs an epilogue that converts the f32 accumulator`,
        { synth, param: "out" },
      );
    return {
      declare: () => {},
      apply: (_b, acc) => (Array.isArray(acc) ? (acc[0] as Val<"f32">) : (acc as Val<"f32">)),
      type: "f32",
    };
  }
  const inputs = new Map(ep.inputs.map((i) => [i.name, i]));
  for (const i of ep.inputs) {
    checkDType(synth, i.name, i.dtype);
    if (/^acc\d*$/.test(i.name))
      throw new KernelgenError("bad_param", `an epilogue input may not be called ${i.name}`, { synth, param: i.name });
  }
  const types = typeNodes(synth, ep.nodes, (n) =>
    /^acc\d*$/.test(n) ? "f32" : inputs.has(n) ? valueTypeOf(inputs.get(n)!.dtype) : undefined,
  );
  const type = types[ep.node];
  if (type === undefined)
    throw new KernelgenError("bad_param", `epilogue node ${ep.node} does not exist`, { synth, param: "epilogue.node" });
  if (type !== valueTypeOf(outDtype))
    throw new KernelgenError("bad_dtype", `epilogue yields ${type} but the output is ${outDtype}`, {
      synth,
      param: "epilogue.node",
    });
  const bufs = new Map<string, Arr>();
  return {
    type,
    declare: (b) => {
      for (const i of ep.inputs) bufs.set(i.name, b.buffer(i.name, elemOf(i.dtype), "read"));
    },
    apply: (b, acc, col, idx) => {
      const accs = Array.isArray(acc) ? acc : [acc as Val<"f32">];
      const vals = emitNodes(
        b,
        ep.nodes,
        types,
        (n) => {
          if (/^acc\d*$/.test(n)) {
            const a = accs[n === "acc" ? 0 : Number(n.slice(3))];
            if (a === undefined)
              throw new KernelgenError(
                "bad_param",
                `epilogue reads ${n} but the contraction has ${accs.length} weight(s)`,
                { synth, param: n },
              );
            return a;
          }
          const i = inputs.get(n) as EpilogueInput;
          return loadAs(bufs.get(n)!, i.dtype, i.kind === "col" ? col : idx);
        },
        [ep.node],
      );
      return vals[ep.node] as Val<ExprType>;
    },
  };
}

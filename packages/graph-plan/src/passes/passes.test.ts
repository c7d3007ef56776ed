// Unit tests of the pipeline's fixed order and of single passes run on a draft: CSE, iota and constant
// folding, canonical view chains, DCE, legalization's Concat split against the binding limit.

import { describe, expect, test } from "vitest";
import { Builder, evaluate, type Graph } from "@poot/graph-ir";
import { PLAN_OPS } from "../composite/table.js";
import { Draft } from "../draft.js";
import { resolveOptions } from "../options.js";
import { runPass, type Pass } from "../rules.js";
import { defaultTarget } from "../target.js";
import { canonicalize } from "./canonicalize.js";
import { cse } from "./cse.js";
import { dce } from "./dce.js";
import { iotaFolding } from "./iota.js";
import { legalize } from "./lowering.js";
import { PIPELINE } from "./pipeline.js";

function apply(
  g: Graph,
  passes: Pass[],
  target = defaultTarget("cuda"),
): { graph: Graph; rewrites: Record<string, number>[] } {
  const draft = new Draft(g, PLAN_OPS);
  const rewrites = passes.map((p) => ({
    ...runPass(p, { draft, target, options: resolveOptions(), decline: () => {}, numericalDeclines: [] }).rewrites,
  }));
  return { graph: draft.toGraph().graph, rewrites };
}

test("the pipeline runs in DESIGN.md's fixed order (plus routed experts, decision 0401, and horizontal groups, 0402) and every pass declares its numerics", () => {
  expect(PIPELINE.map((p) => p.name)).toEqual([
    "canonicalize",
    "cse",
    "iota-folding",
    "rope-attention",
    "dce",
    "packed",
    "legalize",
    "dense-bf16",
    "routed-experts",
    "reduction-prep",
    "fusion",
    "tiling",
    "flash-regions",
    "horizontal-groups",
  ]);
  for (const p of PIPELINE) expect(["exact", "declined-unless-proved"]).toContain(p.numerics);
});

describe("single passes", () => {
  test("CSE merges equal equations; DCE removes what nobody reads", () => {
    const b = new Builder();
    const x = b.const("x", "f32", [4]);
    const a1 = b.exp(x),
      a2 = b.exp(x);
    b.exp(a1); // dead
    b.output("y", b.add(a1, a2));
    const { graph, rewrites } = apply(b.build(), [cse, dce]);
    expect(rewrites[0]).toEqual({ "common-subexpression": 1 });
    expect(graph.eqns.map((e) => e.op)).toEqual(["Exp", "Add"]);
    expect(graph.eqns[1]!.inputs[0]).toBe(graph.eqns[1]!.inputs[1]);
  });

  test("CSE makes Computed values with equal bytes one value and keeps different bytes apart", () => {
    const b = new Builder();
    const x = b.const("x", "f32", [2, 3]);
    const table = (k: number) => b.mul(b.cast(b.iota([2, 3], 1, "i32"), "f32"), k);
    b.output("y", b.add(b.add(b.mul(x, table(0.5)), b.mul(x, table(0.5))), b.mul(x, table(0.25))));
    const g = b.build();
    const { graph } = apply(g, [iotaFolding, cse, dce]);
    const used = new Set(
      graph.eqns
        .flatMap((e) => e.inputs)
        .filter((o): o is number => typeof o === "number" && graph.values[o]!.storage.kind === "computed"),
    );
    expect(used.size).toBe(2);
    const xs = [1, 2, 3, 4, 5, 6];
    expect(evaluate(graph, { consts: { x: xs } }).outputs.y!.data).toEqual(
      evaluate(g, { consts: { x: xs } }).outputs.y!.data,
    );
  });

  test("iota and all-constant equations fold into Computed values with eval's results", () => {
    const b = new Builder();
    const t = b.mul(b.cast(b.iota([2, 3], 1, "i32"), "f32"), 0.5);
    b.output("y", b.add(b.const("x", "f32", [2, 3]), t));
    const g = b.build();
    const { graph } = apply(g, [iotaFolding]);
    expect(graph.eqns.map((e) => e.op)).toEqual(["Add"]);
    const folded = graph.values.find((v) => v.storage.kind === "computed")!;
    expect(Array.from((folded.storage as { data: Float32Array }).data)).toEqual([0, 0.5, 1, 0, 0.5, 1]);
    const x = [1, 2, 3, 4, 5, 6];
    expect(evaluate(graph, { consts: { x } }).outputs.y!.data).toEqual(evaluate(g, { consts: { x } }).outputs.y!.data);
  });

  test("canonicalize folds transpose and reshape chains and drops identities", () => {
    const b = new Builder();
    const x = b.const("x", "f32", [2, 3, 4]);
    const t = b.transpose(b.transpose(x, [1, 0, 2]), [1, 0, 2]);
    b.output("y", b.mul(b.reshape(b.reshape(t, [6, 4]), [24]), 1));
    const { graph } = apply(b.build(), [canonicalize, dce]);
    expect(graph.eqns.map((e) => e.op)).toEqual(["Reshape"]);
  });

  test("legalization splits a Concat that would exceed the binding limit", () => {
    const b = new Builder();
    const xs = Array.from({ length: 12 }, (_, i) => b.const(`x${i}`, "f32", [2, 1]));
    b.output("y", b.concat(xs, 1));
    const g = b.build();
    const { graph } = apply(g, [legalize], defaultTarget("wgpu", { maxStorageBuffers: 8 }));
    for (const e of graph.eqns) expect(e.inputs.length + 1).toBeLessThanOrEqual(8);
    const consts = Object.fromEntries(xs.map((_, i) => [`x${i}`, [i, -i]]));
    expect(evaluate(graph, { consts }).outputs.y!.data).toEqual(evaluate(g, { consts }).outputs.y!.data);
  });
});

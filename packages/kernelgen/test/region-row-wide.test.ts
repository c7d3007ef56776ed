// Row regions (RMSNorm) with few rows take a 1024-thread workgroup on devices with 32-wide subgroups (decision 0807):
// a decode step's norm is one row of 2048 on 132 SMs, where each of 256 threads walked 8 columns as a serial chain of
// loads. Run through graph-plan and the interpreter against graph-ir's float64 evaluation.

import { Builder, evaluate } from "@poot/graph-ir";
import { compile, defaultTarget } from "@poot/graph-plan";
import { describe, expect, it } from "vitest";
import { cpuSynthCaps, interpretProgram, planKernel, synthCapsFrom } from "@poot/kernelgen";
import { rowWorkgroupLimit } from "../src/adapter/region-kernels.js";
import { expectClose, randF32, rng } from "./helpers.js";

function softmaxGraph(rows: number, cols: number) {
  const b = new Builder();
  b.output("y", b.softmax(b.slot("Hidden", "x", "f32", [rows, cols])));
  return b.build();
}

function normGraph(rows: number, cols: number) {
  const b = new Builder();
  const x = b.slot("Hidden", "x", "f32", [rows, cols]);
  b.output("y", b.rmsNorm(x, b.const("w", "f32", [cols]), 1e-5));
  return b.build();
}

/**
 * Compiles `graph(rows, cols)` for `target` (decode), checks its one synthesized row plan takes `threads` a workgroup
 * under `caps`, and runs the program in the interpreter against graph-ir's float64 evaluation (inputs seeded by `seed`).
 */
function checkRowPlan(
  graph: typeof normGraph,
  rows: number,
  cols: number,
  target: ReturnType<typeof defaultTarget>,
  caps: Parameters<typeof planKernel>[1],
  threads: number,
  seed: number,
): void {
  const g = graph(rows, cols);
  const prog = compile(g, target, { mode: "decode", preferImported: false });
  const rowPlans = prog
    .plans()
    .filter((p) => p.kernel.provenance === "synthesized" && p.kernel.request.kind === "reduction-row");
  expect(rowPlans).toHaveLength(1);
  const k = planKernel(rowPlans[0]!.kernel as never, caps, "row");
  expect(k.kernel.workgroupSize[0]).toBe(threads);
  const r = rng(seed);
  const bind = { slots: { x: randF32(r, rows * cols, 2) }, consts: { w: randF32(r, cols, 1) } };
  const run = interpretProgram(prog, bind as never, { caps });
  const want = evaluate(g, bind as never).outputs.y!.data;
  expectClose(run.outputs.y as Float32Array, want, 1, 2e-6);
}

describe("row regions with few rows on 32-wide subgroups", () => {
  const target = defaultTarget("cuda");
  const caps = { ...synthCapsFrom(target.caps as never), computeUnits: 132 };
  for (const [rows, cols, wg] of [
    [1, 2048, 1024],
    [3, 1000, 1024],
    [160, 512, 256],
  ] as const) {
    it(`RMSNorm ${rows} x ${cols}: ${wg} threads a row, against the f64 evaluation`, () =>
      checkRowPlan(normGraph, rows, cols, target, caps, wg, rows * 7 + cols));
  }

  it("keeps 256 threads without 32-wide subgroups or with rows enough for every unit; 1 on serial-thread caps", () => {
    expect(rowWorkgroupLimit(1, { maxWorkgroup: 1024, sharedBytes: 49152, subgroupSize: 32, computeUnits: 132 })).toBe(
      1024,
    );
    expect(rowWorkgroupLimit(1, { maxWorkgroup: 1024, sharedBytes: 49152, subgroupSize: 8, computeUnits: 132 })).toBe(
      256,
    );
    expect(rowWorkgroupLimit(1, { maxWorkgroup: 1024, sharedBytes: 49152, subgroupSize: 32 })).toBe(256);
    expect(
      rowWorkgroupLimit(132, { maxWorkgroup: 1024, sharedBytes: 49152, subgroupSize: 32, computeUnits: 132 }),
    ).toBe(256);
    expect(
      rowWorkgroupLimit(1, {
        maxWorkgroup: 256,
        sharedBytes: 1 << 16,
        subgroupSize: 32,
        computeUnits: 132,
        serialThreads: true,
      }),
    ).toBe(1);
  });
});

// Serial-thread caps (CPU): one thread reduces a row into interleaved partials kept in registers (decision 2481).
describe("row regions on serial-thread caps", () => {
  const target = defaultTarget("cpu");
  const caps = cpuSynthCaps();
  const cases = [
    ["RMSNorm", normGraph, 1, 2048],
    ["RMSNorm", normGraph, 3, 1001],
    ["RMSNorm", normGraph, 2, 5],
    ["softmax", softmaxGraph, 2, 1001],
  ] as const;
  for (const [what, graph, rows, cols] of cases) {
    it(`${what} ${rows} x ${cols}: one thread a row, against the f64 evaluation`, () =>
      checkRowPlan(graph, rows, cols, target, caps, 1, rows * 11 + cols));
  }
});

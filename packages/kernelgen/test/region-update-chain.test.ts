// A chain of in-place DynamicUpdateSlices (a paged KV write, one update per token) is one region whose kernel writes
// only the update windows, in order, instead of evaluating the chain at every element of the page pool (decision
// 2450). Run through graph-plan and the interpreter against graph-ir's float64 evaluation.

import { Builder, evaluate } from "@poot/graph-ir";
import { compile, defaultTarget } from "@poot/graph-plan";
import { describe, expect, it } from "vitest";
import { interpretProgram, planKernel, synthCapsFrom } from "@poot/kernelgen";
import { expectExact, randF32, rng } from "./helpers.js";

const POOL = 64,
  HEADS = 2,
  DIM = 4,
  TOKENS = 3;

/** The pool [64, 2, 4] written with one update per token; `rows` tokens per update (1: a paged write). */
function chainGraph(rows = 1) {
  const b = new Builder();
  const slots = b.slot("Pos", "slots", "i32", [TOKENS]);
  const x = b.slot("Token", "x", "f32", [TOKENS * rows, HEADS, DIM]);
  const pool = b.state("pool", "f32", [POOL, HEADS, DIM]);
  const zero = b.computed("i32", [], new Int32Array([0]));
  let next = pool;
  for (let t = 0; t < TOKENS; t++) {
    const at = b.reshape(b.slice(slots, [t], [t + 1]), []);
    next = b.dynamicUpdateSlice(next, b.slice(x, [t * rows, 0, 0], [(t + 1) * rows, HEADS, DIM]), [at, zero, zero]);
  }
  b.setState(pool, next);
  return b.build();
}

const target = defaultTarget("cpu", { subgroupSize: 1 });
const caps = synthCapsFrom(target.caps as never);

/** The chain's one region plan and the threads its kernel launches. */
function chainThreads(g: ReturnType<typeof chainGraph>): number {
  const prog = compile(g, target, { mode: "decode", preferImported: false });
  const plans = prog.plans().filter((p) => p.kernel.provenance === "synthesized" && p.dispatches.length > 0);
  expect(plans).toHaveLength(1);
  const k = planKernel(plans[0]!.kernel as never, caps, "chain");
  return (k.kernel.workgroupSize[0] as number) * k.grid[0] * k.grid[1] * k.grid[2];
}

function bindings(slots: number[], rows = 1) {
  const r = rng(slots.reduce((a, s) => a * 31 + s, 7));
  return {
    slots: { slots: Int32Array.from(slots), x: randF32(r, TOKENS * rows * HEADS * DIM, 2) },
    state: { pool: randF32(r, POOL * HEADS * DIM, 1) },
  };
}

describe("in-place update chains write only their windows", () => {
  it("a paged write of 3 tokens launches the window's 8 threads, not the pool's 512", () => {
    expect(chainThreads(chainGraph())).toBe(HEADS * DIM);
  });

  for (const slots of [
    [0, 1, 2],
    [5, 5, 63],
    [63, 0, 63],
  ])
    it(`slots ${slots}: the pool equals the f64 evaluation (a slot written twice keeps the later token)`, () => {
      const g = chainGraph();
      const bind = bindings(slots);
      const prog = compile(g, target, { mode: "decode", preferImported: false });
      const got = interpretProgram(prog, bind as never, { caps }).state.pool as Float32Array;
      expectExact(got, evaluate(g, bind as never).state!.pool!.data);
    });

  it("planted: keeping the earlier token of a slot written twice differs from the kernel's pool", () => {
    const g = chainGraph();
    const bind = bindings([5, 5, 63]);
    const prog = compile(g, target, { mode: "decode", preferImported: false });
    const got = interpretProgram(prog, bind as never, { caps }).state.pool as Float32Array;
    const wrong = Float32Array.from(evaluate(g, bind as never).state!.pool!.data);
    wrong.set(bind.slots.x.subarray(0, HEADS * DIM), 5 * HEADS * DIM);
    expect(() => expectExact(got, wrong)).toThrow();
  });

  it("windows of two rows along the slot axis may overlap across threads: the kernel sweeps the pool, still exact", () => {
    const g = chainGraph(2);
    expect(chainThreads(g)).toBe(POOL * HEADS * DIM);
    const bind = bindings([4, 5, 0], 2);
    const prog = compile(g, target, { mode: "decode", preferImported: false });
    const got = interpretProgram(prog, bind as never, { caps }).state.pool as Float32Array;
    expectExact(got, evaluate(g, bind as never).state!.pool!.data);
  });
});

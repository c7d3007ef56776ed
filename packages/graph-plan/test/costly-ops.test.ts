// Caps `costlyOps` (decision 2450): a value a costly op produces (the RoPE tables' cos/sin, which the CPU's Wasm
// computes by calling out of the module) is computed once, as its own region, where fusion would otherwise recompute
// it inside every region that reads it (once per element of every head). Targets without the cap plan as before.

import { describe, expect, test } from "vitest";
import { Builder, type Graph } from "@poot/graph-ir";
import { PLAN_OPS, compile, defaultTarget, type Program, type Target } from "@poot/graph-plan";
import { randomData } from "./llama.js";
import { bindingsFor, compareEval } from "./util.js";

/** Positions -> cos/sin tables [1, T, 8], read by two rotate-half RoPEs of 4 and 2 heads (q and k in miniature). */
function ropeGraph(): Graph {
  const b = new Builder();
  const T = 3;
  const pos = b.slot("Pos", "pos", "i32", [T]);
  const inv = b.const("inv", "f32", [4]);
  const angle = b.mul(b.reshape(b.cast(pos, "f32"), [T, 1]), inv);
  const emb = b.reshape(b.concat([angle, angle], -1), [1, T, 8]);
  const cos = b.unary("Cos", emb),
    sin = b.unary("Sin", emb);
  for (const [name, heads] of [
    ["q", 4],
    ["k", 2],
  ] as const) {
    const x = b.transpose(b.slot("Hidden", name, "f32", [T, heads, 8]), [1, 0, 2]);
    b.output(name, b.ropeRotateHalf(x, cos, sin));
  }
  return b.build();
}

/** Regions of the plan whose nodes hold `op`, each as its node ops. */
function regionsWith(p: Program, op: string): string[][] {
  return p.graph.eqns
    .map((e) => ((e.params.region ?? e.params.epilogue) as { nodes: { op: string }[] } | null)?.nodes ?? [])
    .map((nodes) => nodes.map((n) => n.op))
    .filter((ops) => ops.includes(op));
}

function planned(t: Target): Program {
  const g = ropeGraph();
  const p = compile(g, t);
  const { worst } = compareEval(
    g,
    p.graph,
    PLAN_OPS,
    bindingsFor(g, 3, { pos: [5, 6, 7], q: randomData(96, 4), k: randomData(48, 5) }),
  );
  expect(worst).toBeLessThanOrEqual(1e-6);
  return p;
}

const withCostly = (t: Target): Target => ({ ...t, caps: { ...t.caps, costlyOps: ["Sin", "Cos"] } }) as Target;

describe("caps costlyOps", () => {
  test("cos and sin are one region each, which end in them; the RoPE regions read the tables", () => {
    const p = planned(withCostly(defaultTarget("cpu", { subgroupSize: 1 })));
    for (const op of ["Cos", "Sin"]) {
      const rs = regionsWith(p, op);
      expect(rs).toHaveLength(1);
      expect(rs[0]!.at(-1)).toBe(op);
      expect(rs[0]).not.toContain("Rope");
    }
    expect(p.graph.eqns.filter((e) => e.op === "Fused")).toHaveLength(4);
  });

  test("planted: without the cap (cpu and cuda defaults) each RoPE region recomputes cos and sin", () => {
    for (const t of [defaultTarget("cpu", { subgroupSize: 1 }), defaultTarget("cuda")]) {
      const p = planned(t);
      expect(regionsWith(p, "Cos")).toHaveLength(2);
      expect(regionsWith(p, "Sin")).toHaveLength(2);
    }
  });
});

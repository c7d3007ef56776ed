// Interleaved (GPT-J / llama.cpp "normal") RoPE, decision 1690: graph-ir's ropeInterleaved chain becomes one Rope
// of style "interleaved", fuses into a projection's epilogue exactly where rotate-half does (same dispatch count),
// and evaluates equal to the primitive graph; chains that pair the wrong elements are declined, not rewritten.

import { describe, expect, test } from "vitest";
import { Builder, type Graph, type Ref } from "@poot/graph-ir";
import { PLAN_OPS, compile, defaultTarget } from "@poot/graph-plan";
import { bindingsFor, compareEval, opCounts } from "./util.js";

const H = 2,
  T = 3,
  D = 8;

/** q = RoPE(heads(x @ W^T)) over [1, H, T, D], the model's shape of a Q projection with its rotary embedding. */
function projected(style: "half" | "interleaved", rotaryDim = D): Graph {
  const b = new Builder();
  const x = b.const("x", "f32", [T, 16]);
  const q = b.transpose(b.reshape(b.linear(x, b.const("w", "f32", [H * D, 16])), [1, T, H, D]), [0, 2, 1, 3]);
  const cos = b.const("cos", "f32", [1, 1, T, rotaryDim]),
    sin = b.const("sin", "f32", [1, 1, T, rotaryDim]);
  const rope = (y: Ref) => (style === "half" ? b.ropeRotateHalf(y, cos, sin) : b.ropeInterleaved(y, cos, sin));
  const y =
    rotaryDim === D
      ? rope(q)
      : b.concat(
          [rope(b.slice(q, [0, 0, 0, 0], [1, H, T, rotaryDim])), b.slice(q, [0, 0, 0, rotaryDim], [1, H, T, D])],
          -1,
        );
  b.output("q", y);
  return b.build();
}

describe("interleaved RoPE", () => {
  test.each(["cpu", "cuda", "vulkan", "wgpu"] as const)(
    "%s: becomes one interleaved Rope and fuses like rotate-half (same dispatches)",
    (kind) => {
      const target = defaultTarget(kind);
      const inter = projected("interleaved");
      const p = compile(inter, target);
      const half = compile(projected("half"), target);
      const ropes = p.graph.eqns.flatMap((e) => {
        const r = (e.params.epilogue ?? e.params.region) as { nodes: { op: string; params: unknown }[] } | null;
        return [e, ...(r?.nodes ?? [])].filter((n) => n.op === "Rope").map((n) => n.params as { style: string });
      });
      expect(ropes).toEqual([expect.objectContaining({ style: "interleaved" })]);
      expect(p.graph.eqns.length).toBe(half.graph.eqns.length);
      expect(p.graph.eqns.map((e) => e.op)).toEqual(half.graph.eqns.map((e) => e.op));
      expect(p.declines().filter((d) => d.pattern === "rope")).toEqual([]);
      expect(compareEval(inter, p.graph, PLAN_OPS, bindingsFor(inter, 3, {})).worst).toBeLessThanOrEqual(1e-6);
    },
  );

  test("a partial rotary head (the first 4 of 8 dims) is recognized and evaluates equal", () => {
    const g = projected("interleaved", 4);
    const p = compile(g, defaultTarget("cuda"));
    expect(p.declines().filter((d) => d.pattern === "rope")).toEqual([]);
    expect(JSON.stringify(p.graph.eqns.map((e) => e.params))).toContain('"style":"interleaved"');
    expect(compareEval(g, p.graph, PLAN_OPS, bindingsFor(g, 4, {})).worst).toBeLessThanOrEqual(1e-6);
  });

  // Planted violations: chains one step off the interleaved rotation must stay primitives (and still evaluate right).
  const near = (form: "unnegated-first" | "swapped-parts" | "pairs-across-heads") => {
    const b = new Builder();
    const x = b.const("x", "f32", [H, T, D]);
    const pairs =
      form === "pairs-across-heads"
        ? b.reshape(b.transpose(x, [1, 0, 2]), [H, T, D / 2, 2])
        : b.reshape(x, [H, T, D / 2, 2]);
    const even = b.slice(pairs, [0, 0, 0, 0], [H, T, D / 2, 1]),
      odd = b.slice(pairs, [0, 0, 0, 1], [H, T, D / 2, 2]);
    const parts =
      form === "unnegated-first"
        ? [even, b.neg(odd)]
        : form === "swapped-parts"
          ? [b.neg(even), odd]
          : [b.neg(odd), even];
    const rot = b.reshape(b.concat(parts, -1), [H, T, D]);
    b.output("y", b.add(b.mul(x, b.const("cos", "f32", [T, D])), b.mul(rot, b.const("sin", "f32", [T, D]))));
    return b.build();
  };
  test.each([
    ["the negation on the second part", "unnegated-first", "neg-second-half"],
    ["the even element negated", "swapped-parts", "pair-slices"],
    ["pairs of a transposed view of x", "pairs-across-heads", "same-x"],
  ] as const)("declined: %s", (_n, form, check) => {
    const g = near(form);
    const p = compile(g, defaultTarget("wgpu"));
    expect(opCounts(p.graph).Rope).toBeUndefined();
    expect(p.declines()).toEqual([expect.objectContaining({ pattern: "rope", check })]);
    expect(compareEval(g, p.graph, PLAN_OPS, bindingsFor(g, 5, {})).worst).toBeLessThanOrEqual(1e-6);
  });
});

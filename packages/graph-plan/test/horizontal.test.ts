// Horizontal groups (horizontalFusion "grouped", the default; decision 0402): GEMVs sharing A with their own epilogues
// (q/k/v) are proved joinable, placed side by side and planned as one dispatch; the gate refuses other reads of A.

import { describe, expect, test } from "vitest";
import { BACKEND_KINDS, PLAN_OPS, compile, defaultTarget, planLimits, type Program } from "@poot/graph-plan";
import { Builder } from "@poot/graph-ir";
import { buildLlama, TINY } from "./llama.js";
import { bindingsFor, compareEval } from "./util.js";

/** Names of the values each group's members define. */
const groupNames = (p: Program): string[][] =>
  p.horizontalGroups().map((g) => g.map((k) => p.graph.values[p.graph.eqns[k]!.out]!.name ?? "?"));

describe('horizontalFusion "grouped" on the tiny Llama', () => {
  test.each(BACKEND_KINDS)(
    "%s: q/k/v of each layer form one group (one dispatch) where the bindings fit, and it evaluates equal",
    (kind) => {
      for (const shape of [TINY, { ...TINY, weightDtype: "bf16" as const }]) {
        const g = buildLlama(shape);
        const plain = compile(g, defaultTarget(kind), { horizontalFusion: "shared-epilogue" });
        const p = compile(g, defaultTarget(kind));
        expect(plain.horizontalGroups()).toEqual([]);
        const wide = planLimits(defaultTarget(kind)).maxStorageBuffers > 8;
        const want = wide
          ? Array.from({ length: shape.layers }, (_, l) => [
              `layers.${l}.q`,
              `layers.${l}.k_cache_out`,
              `layers.${l}.v_cache_out`,
            ])
          : [];
        expect(groupNames(p)).toEqual(want);
        for (const grp of p.horizontalGroups()) {
          const es = grp.map((k) => p.graph.eqns[k]!);
          // Consecutive, one A, each member its own epilogue (RoPE on q and k, in-place cache writes on k and v).
          expect(grp).toEqual(grp.map((_, i) => grp[0]! + i));
          expect(new Set(es.map((e) => e.inputs[0])).size).toBe(1);
          expect(es.every((e) => e.params.epilogue !== null)).toBe(true);
        }
        // Narrow targets say why: one dispatch would bind more buffers than they allow.
        if (!wide)
          expect(
            p
              .declines()
              .filter((d) => d.pattern === "horizontal")
              .map((d) => d.check),
          ).toContain("bindings");
        // Each group is one launch instead of three.
        expect(p.dispatchCount()).toBe(plain.dispatchCount() - 2 * want.length);
        for (const [l, n] of p.dispatchBreakdown().perLayer)
          expect(n).toBe(plain.dispatchBreakdown().perLayer.get(l)! - (wide ? 2 : 0));
        const { worst } = compareEval(g, p.graph, PLAN_OPS, bindingsFor(g, 17, { ids: [6], pos: [4] }));
        expect(worst).toBeLessThanOrEqual(1e-6);
      }
    },
  );

  test("prefill (more than 8 rows) forms no group and says the members are not GEMVs", () => {
    const g = buildLlama({ ...TINY, tokens: 12 });
    const p = compile(g, defaultTarget("cuda"), { mode: "prefill", horizontalFusion: "grouped" });
    expect(p.horizontalGroups()).toEqual([]);
    expect(
      p
        .declines()
        .filter((d) => d.name === "layers.0.q")
        .map((d) => d.check),
    ).toEqual(["gemv"]);
  });

  test("an unknown value is a typed bad-option error", () => {
    expect(() => compile(buildLlama(TINY), defaultTarget("cuda"), { horizontalFusion: "all" as "grouped" })).toThrow(
      /horizontalFusion/,
    );
  });
});

describe("the horizontal gate refuses", () => {
  const grouped = (b: Builder): Program => {
    const g = b.build();
    const p = compile(g, defaultTarget("cuda"), { horizontalFusion: "grouped" });
    expect(
      compareEval(
        g,
        p.graph,
        PLAN_OPS,
        bindingsFor(g, 3, {
          x: Array.from({ length: 16 }, (_, i) => Math.sin(i)),
          y: Array.from({ length: 16 }, (_, i) => Math.cos(i)),
        }),
      ).worst,
    ).toBeLessThanOrEqual(1e-6);
    return p;
  };

  test("two contractions of one A read the same way (the positive control)", () => {
    const b = new Builder();
    const x = b.slot("Hidden", "x", "f32", [1, 16]);
    b.output("a", b.linear(x, b.const("w1", "f32", [8, 16])));
    b.output("c", b.linear(x, b.const("w2", "f32", [12, 16])));
    const p = grouped(b);
    expect(p.horizontalGroups().map((g) => g.length)).toEqual([2]);
  });

  test("contractions of different A: no group and nothing to decline", () => {
    const b = new Builder();
    b.output("a", b.linear(b.slot("Hidden", "x", "f32", [1, 16]), b.const("w1", "f32", [8, 16])));
    b.output("c", b.linear(b.slot("Hidden", "y", "f32", [1, 16]), b.const("w2", "f32", [8, 16])));
    const p = grouped(b);
    expect(p.horizontalGroups()).toEqual([]);
    expect(p.declines()).toEqual([]);
  });

  test("a transposed and a plain read of the weights: a typed numerical decline", () => {
    const b = new Builder();
    const x = b.slot("Hidden", "x", "f32", [1, 16]);
    b.output("a", b.linear(x, b.const("w1", "f32", [8, 16])));
    b.output("c", b.matmul(x, b.const("w2", "f32", [16, 8])));
    const p = grouped(b);
    expect(p.horizontalGroups()).toEqual([]);
    const nd = p.numericalDeclines().filter((d) => d.pass === "horizontal-groups");
    expect(nd.map((d) => [d.reason, d.detail])).toEqual([
      ["read-differs", "one weight is read transposed and the other is not"],
    ]);
  });

  test("A read through a different view of its source: a typed numerical decline", () => {
    const b = new Builder();
    const x = b.slot("Hidden", "x", "f32", [1, 16]);
    b.output("a", b.linear(x, b.const("w1", "f32", [8, 16])));
    b.output("c", b.linear(b.reshape(x, [1, 1, 16]), b.const("w2", "f32", [8, 16])));
    const p = grouped(b);
    expect(p.horizontalGroups()).toEqual([]);
    expect(
      p
        .numericalDeclines()
        .filter((d) => d.pass === "horizontal-groups")
        .map((d) => d.reason),
    ).toEqual(["read-differs"]);
  });

  test("a contraction whose epilogue reads the other's result (joining would race)", () => {
    const b = new Builder();
    const x = b.slot("Hidden", "x", "f32", [1, 16]);
    const a = b.linear(x, b.const("w1", "f32", [8, 16]));
    // Also an output, so fusion cannot absorb it as a second head of c's epilogue.
    b.output("a", a);
    b.output("c", b.add(b.linear(x, b.const("w2", "f32", [8, 16])), b.mul(a, a)));
    const p = grouped(b);
    expect(p.horizontalGroups()).toEqual([]);
    expect(
      p
        .declines()
        .filter((d) => d.pattern === "horizontal")
        .map((d) => d.check),
    ).toContain("dependent");
  });
});

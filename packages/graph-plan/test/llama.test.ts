// End-to-end: a hand-built Llama decoder compiled for every target kind evaluates exactly like the
// primitive graph under graph-ir's eval (the oracle), in decode and prefill, f32 and bf16 weights.

import { describe, expect, test } from "vitest";
import {
  BACKEND_KINDS,
  PLAN_OPS,
  compile,
  defaultTarget,
  makeTarget,
  swigluGate,
  type DeviceCaps,
  type Region,
} from "@poot/graph-plan";
import { buildLlama, TINY } from "./llama.js";
import { bindingsFor, compareEval, opCounts } from "./util.js";

describe.each(BACKEND_KINDS)("tiny Llama on %s", (kind) => {
  test.each([
    ["decode f32", { ...TINY }, [5]],
    ["decode bf16 weights", { ...TINY, weightDtype: "bf16" as const }, [0]],
    ["prefill of 4 tokens", { ...TINY, tokens: 4 }, [3]],
  ])("%s: optimized logits and KV state equal the primitive graph's", (_name, shape, [pos]) => {
    const g = buildLlama(shape);
    const p = compile(g, defaultTarget(kind), { mode: shape.tokens > 1 ? "prefill" : "decode" });
    const ids = Array.from({ length: shape.tokens }, (_, i) => (7 * i + 3) % shape.vocab);
    const { worst } = compareEval(g, p.graph, PLAN_OPS, bindingsFor(g, 11, { ids, pos: [pos!] }));
    expect(worst).toBeLessThanOrEqual(1e-6);
    const ops = opCounts(p.graph);
    // Every layer's attention and both RoPEs were recognized (RoPE then fused into the q/k epilogues).
    expect(ops.Attention).toBe(shape.layers);
    expect(p.graph.eqns.filter((e) => JSON.stringify(e.params).includes('"op":"Rope"')).length).toBe(2 * shape.layers);
  });
});

test("decode steps chained through the KV state stay equal to the primitive graph at every position", () => {
  const g = buildLlama(TINY);
  const p = compile(g, defaultTarget("wgpu"));
  let b = bindingsFor(g, 3, { ids: [1], pos: [0] });
  // Start from an all-zero cache: the causal mask must hide every row not yet written.
  for (const k of Object.keys(b.state)) b.state[k]!.fill(0);
  for (let pos = 0; pos < 5; pos++) {
    b = { ...b, slots: { ids: [(pos * 13 + 1) % TINY.vocab], pos: [pos] } };
    const { worst, ref } = compareEval(g, p.graph, PLAN_OPS, b);
    expect(worst).toBeLessThanOrEqual(1e-6);
    b = {
      ...b,
      state: Object.fromEntries(
        Object.entries(ref.state).map(([k, t]) => [k, Float32Array.from(t.data as Float64Array)]),
      ),
    };
  }
});

test("greedy argmax over a long vocabulary runs in two stages and picks the same ids", () => {
  const shape = { ...TINY, tokens: 3, vocab: 97, greedy: true };
  const g = buildLlama(shape);
  const p = compile(g, defaultTarget("cuda"), { argmaxSplitAbove: 32, argmaxChunk: 16 });
  expect(opCounts(p.graph).ArgMaxChunk).toBe(1);
  expect(opCounts(p.graph).ArgMaxCombine).toBe(1);
  const { got, ref } = compareEval(g, p.graph, PLAN_OPS, bindingsFor(g, 5, { ids: [4, 50, 96], pos: [2] }));
  expect(Array.from(got.outputs.next!.data)).toEqual(Array.from(ref.outputs.next!.data));
  const imported = p
    .plans()
    .filter((pl) => pl.kernel.provenance === "imported")
    .map((pl) => (pl.kernel as { name: string }).name);
  expect(imported).toEqual(expect.arrayContaining(["argmax_chunk", "argmax_combine"]));
});

test("fusion off keeps one dispatch per primitive and still evaluates equal", () => {
  const g = buildLlama(TINY);
  const fused = compile(g, defaultTarget("cuda"));
  const plain = compile(g, defaultTarget("cuda"), { fusion: false, recognize: false });
  expect(plain.dispatchCount()).toBeGreaterThan(fused.dispatchCount() * 3);
  expect(compareEval(g, plain.graph, PLAN_OPS, bindingsFor(g, 9, { ids: [2], pos: [4] })).worst).toBeLessThanOrEqual(
    1e-6,
  );
});

describe('contractionEpilogues "own-element" (the CUDA executor\'s setting)', () => {
  /** Contractions whose epilogue holds an op outside what a thread applies to its own accumulator. */
  const crossElement = (p: ReturnType<typeof compile>): number =>
    p.graph.eqns.filter(
      (e) =>
        e.op === "ContractionEpilogue" &&
        /"op":"(Rope|DynamicUpdateSlice|Reduce|Reshape|Transpose|Slice)"/.test(
          JSON.stringify(e.params.epilogue ?? null),
        ),
    ).length;

  test.each([
    ["decode", { ...TINY, weightDtype: "bf16" as const }, "decode"],
    ["prefill of 12 tokens", { ...TINY, tokens: 12 }, "prefill"],
  ] as const)(
    "%s: RoPE and KV writes leave the contractions, gate/up stay joined only for GEMVs, and it evaluates equal",
    (_n, shape, mode) => {
      const g = buildLlama(shape);
      const any = compile(g, defaultTarget("cuda"), { mode });
      const own = compile(g, defaultTarget("cuda"), { mode, contractionEpilogues: "own-element" });
      // The default fuses them (so the check below can fail), the option does not.
      expect(crossElement(any)).toBeGreaterThan(0);
      expect(crossElement(own)).toBe(0);
      const twoHeads = own.graph.eqns.filter((e) => e.op === "ContractionEpilogue" && e.params.heads === 2).length;
      expect(twoHeads).toBe(shape.tokens <= 8 ? shape.layers : 0);
      const { worst } = compareEval(
        g,
        own.graph,
        PLAN_OPS,
        bindingsFor(g, 13, {
          ids: Array.from({ length: shape.tokens }, (_, i) => (5 * i + 1) % shape.vocab),
          pos: [0],
        }),
      );
      expect(worst).toBeLessThanOrEqual(1e-6);
    },
  );

  test("an unknown value is a typed bad-option error", () => {
    expect(() => compile(buildLlama(TINY), defaultTarget("cuda"), { contractionEpilogues: "some" as "any" })).toThrow(
      /contractionEpilogues/,
    );
  });
});

describe("caps residualOnlyWeights (the CPU's native GEMVs, decision 2345)", () => {
  /** The cpu target whose contractions over `formats` take only a residual add or two heads. */
  const cpu = (formats: readonly string[]) =>
    makeTarget({ kind: "cpu", caps: { ...(defaultTarget("cpu").caps as DeviceCaps), residualOnlyWeights: formats } });
  /** What each contraction's epilogue is: none, a lone residual add, two heads, or other (fused beyond the kernels). */
  const epilogues = (p: ReturnType<typeof compile>): string[] =>
    p.plans().flatMap((pl) => {
      const e = p.graph.eqns[pl.eqn]!;
      if (e.op !== "ContractionEpilogue" || pl.kernel.provenance === "none") return [];
      const r = e.params.epilogue as { nodes: { op: string }[] } | null;
      if (r === null) return ["none"];
      if (e.params.heads === 2)
        return [
          r.nodes.some((n) => /Rope|DynamicUpdateSlice|Reduce/.test(n.op)) ? "other" : `heads2x${pl.dispatches.length}`,
        ];
      return [r.nodes.length === 1 && r.nodes[0]!.op === "Add" ? "add" : "other"];
    });

  test.each([
    ["decode", TINY, "decode"],
    ["prefill of 12 tokens", { ...TINY, tokens: 12 }, "prefill"],
  ] as const)(
    "%s: a listed format's contractions take nothing but a residual add or two heads (their epilogue a second dispatch); it evaluates equal",
    (_n, shape, mode) => {
      const g = buildLlama(shape);
      const only = compile(g, cpu(["f32"]), { mode });
      const e = epilogues(only);
      expect(e).not.toContain("other");
      expect(e.filter((x) => x === "add").length).toBeGreaterThan(0);
      expect(e.filter((x) => x === "heads2x2").length).toBe(shape.layers);
      // Another format listed: the f32 contractions fuse as before (RoPE, KV writes), so the check above can fail.
      expect(epilogues(compile(g, cpu(["q8_0"]), { mode }))).toContain("other");
      const { worst } = compareEval(
        g,
        only.graph,
        PLAN_OPS,
        bindingsFor(g, 13, {
          ids: Array.from({ length: shape.tokens }, (_, i) => (5 * i + 1) % shape.vocab),
          pos: [0],
        }),
      );
      expect(worst).toBeLessThanOrEqual(1e-6);
    },
  );
});

describe("caps swigluWeights (two-heads GEMVs that apply SwiGLU themselves, decision 2360)", () => {
  const cpu = (caps: Partial<DeviceCaps>) =>
    makeTarget({ kind: "cpu", caps: { ...(defaultTarget("cpu").caps as DeviceCaps), ...caps } });
  /** The dispatches of each two-heads plan, and their epilogues' gate inputs. */
  const twoHeads = (p: ReturnType<typeof compile>): { dispatches: number; gate: 0 | 1 | null }[] =>
    p.plans().flatMap((pl) => {
      const e = p.graph.eqns[pl.eqn]!;
      if (e.op !== "ContractionEpilogue" || e.params.heads !== 2 || pl.kernel.provenance === "none") return [];
      return [{ dispatches: pl.dispatches.length, gate: swigluGate(e.params.epilogue as Region) }];
    });

  test.each(["decode", "prefill"] as const)(
    "%s: the gate/up GEMV is one dispatch where the format is listed",
    (mode) => {
      const g = buildLlama(mode === "decode" ? TINY : { ...TINY, tokens: 12 });
      const heads = twoHeads(compile(g, cpu({ residualOnlyWeights: ["f32"], swigluWeights: ["f32"] }), { mode }));
      expect(heads.length).toBe(TINY.layers);
      for (const h of heads) expect(h).toEqual({ dispatches: 1, gate: expect.any(Number) });
      // Planted: another format listed (or none): the epilogue is the second dispatch again.
      for (const caps of [{ swigluWeights: ["q8_0"] }, {}])
        for (const h of twoHeads(compile(g, cpu({ residualOnlyWeights: ["f32"], ...caps }), { mode })))
          expect(h.dispatches).toBe(2);
    },
  );

  test("swigluGate recognizes silu(in_g) · in_u in either order and nothing else", () => {
    const swiglu = (g: number, u: number, one = 1): Region => ({
      nodes: [
        { op: "Neg", args: [{ in: g }], params: {}, dtype: "f32", shape: [4] },
        { op: "Exp", args: [{ node: 0 }], params: {}, dtype: "f32", shape: [4] },
        { op: "Add", args: [{ lit: one, dtype: "f32" }, { node: 1 }], params: {}, dtype: "f32", shape: [4] },
        { op: "Div", args: [{ in: g }, { node: 2 }], params: {}, dtype: "f32", shape: [4] },
        { op: "Mul", args: [{ in: u }, { node: 3 }], params: {}, dtype: "f32", shape: [4] },
      ],
      result: 4,
    });
    expect(swigluGate(swiglu(0, 1))).toBe(0);
    expect(swigluGate(swiglu(1, 0))).toBe(1);
    // Planted: x / (e^−x + 2) · u, and silu(in0) · in0, are not SwiGLU.
    expect(swigluGate(swiglu(0, 1, 2))).toBeNull();
    expect(swigluGate(swiglu(0, 0))).toBeNull();
  });
});

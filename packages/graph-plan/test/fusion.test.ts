// One test per fusion kind: each builds a small primitive graph, compiles it, checks the composite op
// it must produce, and evaluates the optimized graph against the primitive graph under graph-ir's eval.

import { describe, expect, test } from "vitest";
import { Builder, evaluate, f32ToBf16Bits, type Graph, type PackedFormat } from "@poot/graph-ir";
import { PLAN_OPS, compile, defaultTarget, type Program } from "@poot/graph-plan";
import { bindingsFor, compareEval, opCounts } from "./util.js";

function check(g: Graph, slots: Record<string, ArrayLike<number>> = {}, seed = 1): Program {
  const p = compile(g, defaultTarget("cuda"));
  const { worst } = compareEval(g, p.graph, PLAN_OPS, bindingsFor(g, seed, slots));
  expect(worst).toBeLessThanOrEqual(1e-6);
  return p;
}

const regionOps = (p: Program, op: string): string[][] =>
  p.graph.eqns
    .filter((e) => e.op === op)
    .map(
      (e) =>
        ((e.params.region ?? e.params.epilogue) as { nodes: { op: string }[] } | null)?.nodes.map((n) => n.op) ?? [],
    );

describe("fusion kinds", () => {
  test("pointwise chain with a value read several times (GeGLU, tanh GELU) is one Fused region", () => {
    const b = new Builder();
    // Per-step inputs (slots): work over weights alone would run once at bind time instead.
    const g0 = b.slot("Hidden", "g", "f32", [3, 16]),
      u = b.slot("Hidden", "u", "f32", [3, 16]);
    b.output("y", b.geglu(g0, u, "tanh"));
    const p = check(b.build(), {
      g: Array.from({ length: 48 }, (_, i) => Math.sin(i) * 3),
      u: Array.from({ length: 48 }, (_, i) => Math.cos(i)),
    });
    expect(opCounts(p.graph)).toEqual({ Fused: 1 });
    expect(p.dispatchCount()).toBe(1);
    // x is read by x*x*x, x+.., x*0.5: one input, several reads inside the region.
    expect(p.graph.eqns[0]!.inputs.length).toBe(2);
  });

  test("I32 bit ops and Select as a bit move fuse into one region", () => {
    const b = new Builder();
    const x = b.slot("Token", "x", "i32", [8]);
    const m = b.bit("And", b.bit("Shr", b.bit("Xor", x, 0x5a5a), 3), 0xff);
    b.output("y", b.select(b.cmp("Gt", m, 40), m, b.bit("Shl", m, 1)));
    const p = check(b.build(), { x: [1, 2, 300, 4000, -5, 99999, 7, 123456] });
    expect(opCounts(p.graph)).toEqual({ Fused: 1 });
  });

  test.each([
    ["RMSNorm", (b: Builder, x: ReturnType<Builder["const"]>) => b.rmsNorm(x, b.const("w", "f32", [24]), 1e-6)],
    ["softmax with a pointwise epilogue", (b: Builder, x: ReturnType<Builder["const"]>) => b.mul(b.softmax(x), 3)],
    [
      "LayerNorm",
      (b: Builder, x: ReturnType<Builder["const"]>) =>
        b.layerNorm(x, b.const("w", "f32", [24]), b.const("bias", "f32", [24]), 1e-5),
    ],
  ])("%s is one reduction-rooted FusedRow", (_n, f) => {
    const b = new Builder();
    b.output("y", f(b, b.const("x", "f32", [5, 24])));
    const p = check(b.build());
    expect(opCounts(p.graph)).toEqual({ FusedRow: 1 });
    const k = p.plans()[0]!.kernel;
    expect(k.provenance === "synthesized" ? k.request.kind : k.provenance).toBe("reduction-row");
  });

  test("a router's softmax and top-2 selection (argmax, mask, argmax) is one row region", () => {
    const b = new Builder();
    const logits = b.slot("Hidden", "r", "f32", [3, 8]);
    const probs = b.softmax(logits);
    const idx = b.iota([3, 8], 1, "i32");
    const first = b.cmp("Eq", idx, b.reduce("argmax", probs, [-1], true));
    const rest = b.select(first, -Infinity, probs);
    const second = b.cmp("Eq", idx, b.reduce("argmax", rest, [-1], true));
    b.output("w", b.select(b.bit("Or", first, second), probs, 0));
    const p = check(b.build(), { r: Array.from({ length: 24 }, (_, i) => Math.sin(i * 7) * 2) });
    expect(opCounts(p.graph)).toEqual({ FusedRow: 1 });
  });

  test("batched KV writes: one in-place update per sequence chain into the projection's epilogue within 8 bindings", () => {
    const B = 6,
      H = 2,
      S = 8,
      D = 4;
    const b = new Builder();
    const x = b.slot("Hidden", "x", "f32", [B, 16]);
    const pos = b.slot("Pos", "pos", "i32", [B]);
    const k = b.reshape(b.linear(x, b.const("wk", "f32", [H * D, 16])), [B, H, 1, D]);
    const cache = b.state("k_cache", "f32", [B, H, S, D]);
    const zero = b.computed("i32", [], new Int32Array([0]));
    let c = cache;
    for (let i = 0; i < B; i++) {
      const row = b.slice(k, [i, 0, 0, 0], [i + 1, H, 1, D]);
      const p = b.reshape(b.slice(pos, [i], [i + 1]), []);
      c = b.dynamicUpdateSlice(c, row, [b.computed("i32", [], new Int32Array([i])), zero, p, zero]);
    }
    b.setState(cache, c);
    b.output("k", c);
    const g = b.build();
    const p = compile(g, defaultTarget("wgpu"));
    expect(opCounts(p.graph)).toEqual({ ContractionEpilogue: 1 });
    const ep = p.graph.eqns[0]!.params.epilogue as { nodes: { op: string }[] };
    expect(ep.nodes.filter((n) => n.op === "DynamicUpdateSlice").length).toBe(B);
    const plan = p.plans()[0]!;
    expect(
      plan.kernel.provenance === "synthesized" &&
        new Set([...plan.kernel.request.inputs.map((a) => a.root), plan.kernel.request.output.root]).size,
    ).toBeLessThanOrEqual(8);
    expect(p.buffers().aliases.get(p.graph.states[0]!.output)).toBe(p.graph.states[0]!.input);
    const binds = bindingsFor(g, 6, {
      x: Array.from({ length: B * 16 }, (_, i) => Math.cos(i)),
      pos: [0, 7, 3, 3, 5, 1],
    });
    expect(compareEval(g, p.graph, PLAN_OPS, binds).worst).toBeLessThanOrEqual(1e-6);
  });

  test("contraction epilogue: bias, GELU and residual add run inside the contraction", () => {
    const b = new Builder();
    const x = b.const("x", "f32", [4, 16]);
    const y = b.gelu(b.linear(x, b.const("w", "bf16", [12, 16]), b.const("bias", "f32", [12])));
    b.output("y", b.add(y, b.const("res", "f32", [4, 12])));
    const p = check(b.build());
    expect(opCounts(p.graph)).toEqual({ ContractionEpilogue: 1 });
    const e = p.graph.eqns[0]!;
    // The widening cast folded away: the contraction reads the bf16 weight directly.
    expect(p.graph.values[e.inputs[1] as number]!.dtype).toBe("bf16");
    expect(regionOps(p, "ContractionEpilogue")[0]).toEqual(expect.arrayContaining(["Add", "Erf", "Mul"]));
  });

  test("a narrow (bf16) contraction head rounds before the epilogue reads it", () => {
    const b = new Builder();
    const mm = b.matmul(b.const("a", "bf16", [3, 32]), b.const("w", "bf16", [32, 8]));
    b.output("y", b.add(b.cast(mm, "f32"), b.const("r", "f32", [3, 8])));
    const g = b.build();
    const p = check(g, {}, 7);
    const e = p.graph.eqns.find((x) => x.op === "ContractionEpilogue")!;
    expect(e.params.accDtype).toBe("bf16");
    // Independent check of the rounding point: compute in float64, round to bf16, then add.
    const consts = bindingsFor(g, 7, {}).consts;
    const bf = (v: number): number => {
      const bits = f32ToBf16Bits(v);
      return new Float32Array(new Uint32Array([bits << 16]).buffer)[0]!;
    };
    const a = Array.from(consts.a!, bf),
      w = Array.from(consts.w!, bf);
    let acc = 0;
    for (let k = 0; k < 32; k++) acc += a[k]! * w[k * 8]!;
    const want = Math.fround(bf(acc) + consts.r![0]!);
    const got = compareEval(g, p.graph, PLAN_OPS, bindingsFor(g, 7, {})).got.outputs.y!.data[0]!;
    expect(got).toBe(want);
  });

  test("SwiGLU: gate and up share A and run as one two-head contraction with silu(gate) * up as its epilogue", () => {
    const b = new Builder();
    const h = b.slot("Hidden", "h", "f32", [1, 16]);
    b.output("y", b.swiglu(b.linear(h, b.const("wg", "f32", [24, 16])), b.linear(h, b.const("wu", "f32", [24, 16]))));
    const p = check(b.build(), { h: Array.from({ length: 16 }, (_, i) => Math.sin(i)) });
    expect(opCounts(p.graph)).toEqual({ ContractionEpilogue: 1 });
    expect(p.graph.eqns[0]!.params.heads).toBe(2);
    expect(p.dispatchCount()).toBe(1);
  });

  test("computed-constant CSE: two equal RoPE tables become one, gathered once", () => {
    const b = new Builder();
    const pos = b.slot("Pos", "pos", "i32", [1]);
    const t1 = b.computed(
      "f32",
      [6, 4],
      Float32Array.from({ length: 24 }, (_, i) => Math.cos(i)),
    );
    const t2 = b.computed(
      "f32",
      [6, 4],
      Float32Array.from({ length: 24 }, (_, i) => Math.cos(i)),
    );
    const x = b.const("x", "f32", [1, 4]);
    b.output("a", b.mul(x, b.gather(t1, pos)));
    b.output("b", b.add(x, b.gather(t2, pos)));
    const p = check(b.build(), { pos: [3] });
    expect(p.graph.values.filter((v) => v.storage.kind === "computed").length).toBe(1);
  });

  test("RoPE chain (rotate-half) becomes one Rope", () => {
    const b = new Builder();
    const x = b.const("x", "f32", [1, 2, 3, 8]);
    b.output("y", b.ropeRotateHalf(x, b.const("cos", "f32", [3, 8]), b.const("sin", "f32", [3, 8])));
    const g = b.build();
    const p = check(g);
    expect(opCounts(p.graph)).toEqual({ Rope: 1 });
    expect(g.eqns.length).toBeGreaterThanOrEqual(6);
  });

  test("packed contraction and packed row gather", () => {
    const q8: PackedFormat = {
      name: "q8_0",
      blockSize: 32,
      bytesPerBlock: 34,
      decode: {
        op: "mul",
        a: { op: "load", type: "f16", offset: { op: "const", value: 0 } },
        b: { op: "load", type: "i8", offset: { op: "add", a: { op: "const", value: 2 }, b: { op: "i" } } },
      },
    };
    const b = new Builder();
    const table = b.const("emb", { packed: q8 }, [5, 32]);
    const x = b.embedding(table, b.slot("Token", "ids", "i32", [2]));
    b.output("y", b.linear(x, b.const("w", { packed: q8 }, [3, 32])));
    const g = b.build();
    // Packed weights: a finite f16 scale (0x3800 = 0.5) then int8 quants.
    const packedBytes = (rows: number, seed: number): Uint8Array => {
      const u = new Uint8Array(rows * 34);
      for (let r = 0; r < rows; r++) {
        u[r * 34] = 0x00;
        u[r * 34 + 1] = 0x38;
        for (let i = 0; i < 32; i++) u[r * 34 + 2 + i] = (seed * 31 + r * 7 + i * 13) & 0xff;
      }
      return u;
    };
    const p = compile(g, defaultTarget("cuda"));
    expect(Object.keys(opCounts(p.graph)).sort()).toEqual(["PackedContraction", "PackedRowGather"]);
    const binds = { consts: { emb: packedBytes(5, 1), w: packedBytes(3, 2) }, slots: { ids: [4, 1] } };
    const ref = evaluate(g, binds).outputs.y!,
      got = evaluate(p.graph, binds, { ops: PLAN_OPS }).outputs.y!;
    expect(Array.from(got.data)).toEqual(Array.from(ref.data));
  });
});

// Attention recognition and its gates: decode and prefill, GQA, causal and sliding masks, soft-cap and
// additive masks are rewritten; a wrong mask, an unbounded live length and a bare single-KV-head
// broadcast are refused with the first failed check. Every case evaluates equal to the primitive graph.

import { describe, expect, test } from "vitest";
import { Builder, type Graph, type Ref } from "@poot/graph-ir";
import { PLAN_OPS, compile, defaultTarget, type Program } from "@poot/graph-plan";
import { bindingsFor, compareEval, opCounts } from "./util.js";

interface Case {
  tq: number;
  s: number;
  heads: number;
  kv: number;
  d: number;
  mask: "causal" | "sliding" | "wrong" | "none" | "additive" | "finite-fill";
  softCap?: number;
  state?: boolean;
  kvBroadcast?: boolean;
}

function build(c: Case): Graph {
  const b = new Builder();
  const pos = b.slot("Pos", "pos", "i32", [1]);
  const q = b.const("q", "f32", [1, c.heads, c.tq, c.d]);
  const kvShape = [1, c.kvBroadcast === true ? 1 : c.kv, c.s, c.d];
  let k: Ref, v: Ref;
  if (c.state === true) {
    const kc = b.state("k_cache", "f32", kvShape),
      vc = b.state("v_cache", "f32", kvShape);
    const zero = b.computed("i32", [], new Int32Array([0]));
    const p0 = b.reshape(pos, []);
    k = b.dynamicUpdateSlice(kc, b.const("k_new", "f32", [...kvShape.slice(0, 2), c.tq, c.d]), [zero, zero, p0, zero]);
    v = b.dynamicUpdateSlice(vc, b.const("v_new", "f32", [...kvShape.slice(0, 2), c.tq, c.d]), [zero, zero, p0, zero]);
    b.setState(kc, k);
    b.setState(vc, v);
  } else {
    k = b.const("k", "f32", kvShape);
    v = b.const("v", "f32", kvShape);
  }
  if (c.kvBroadcast === true) {
    k = b.broadcast(k, [1, c.heads, c.s, c.d]);
    v = b.broadcast(v, [1, c.heads, c.s, c.d]);
  } else {
    k = b.repeatKv(k, c.heads / c.kv, 1);
    v = b.repeatKv(v, c.heads / c.kv, 1);
  }
  const kIdx = b.iota([1, 1, 1, c.s], 3, "i32");
  const L = b.add(b.reshape(pos, [1, 1, 1, 1]), b.iota([1, 1, c.tq, 1], 2, "i32"));
  let s = b.mul(b.matmul(q, b.transpose(k, [0, 1, 3, 2])), 1 / Math.sqrt(c.d));
  if (c.softCap !== undefined) s = b.mul(b.tanh(b.div(s, c.softCap)), c.softCap);
  switch (c.mask) {
    case "causal":
      s = b.select(b.cmp("Le", kIdx, L), s, -Infinity);
      break;
    case "sliding":
      s = b.select(b.bit("And", b.cmp("Le", kIdx, L), b.cmp("Gt", kIdx, b.sub(L, 3))), s, -Infinity);
      break;
    case "wrong":
      s = b.select(b.cmp("Ge", kIdx, L), s, -Infinity);
      break;
    case "finite-fill":
      s = b.select(b.cmp("Le", kIdx, L), s, -1e9);
      break;
    case "additive":
      s = b.add(s, b.slot("Mask", "mask", "f32", [1, 1, c.tq, c.s]));
      break;
    case "none":
      break;
  }
  b.output("y", b.matmul(b.softmax(s), v));
  return b.build();
}

function run(c: Case, pos = 2): Program {
  const g = build(c);
  const p = compile(g, defaultTarget("cuda"), { mode: c.tq > 1 ? "prefill" : "decode" });
  const mask = Array.from({ length: c.tq * c.s }, (_, i) => (i % 3 === 2 ? -Infinity : 0));
  const { worst } = compareEval(g, p.graph, PLAN_OPS, bindingsFor(g, 4, { pos: [pos], mask }));
  expect(worst).toBeLessThanOrEqual(1e-6);
  return p;
}

const base: Case = { tq: 1, s: 10, heads: 4, kv: 2, d: 8, mask: "causal", state: true };

describe("attention is rewritten", () => {
  test("decode, GQA (4 query heads on 2 KV heads), causal over a KV-cache State", () => {
    const p = run(base);
    const att = p.graph.eqns.find((e) => e.op === "Attention")!;
    expect(att.params).toMatchObject({ mask: "causal", groups: 2, softCap: null });
    expect(p.declines()).toEqual([]);
    expect(p.plans().find((x) => x.op === "Attention")!.kernel).toMatchObject({
      provenance: "synthesized",
      request: { kind: "attention" },
    });
  });

  test("prefill, sliding window of 3, tanh soft-cap", () => {
    const p = run({ ...base, tq: 4, mask: "sliding", softCap: 5 }, 3);
    expect(p.graph.eqns.find((e) => e.op === "Attention")!.params).toMatchObject({
      mask: "sliding",
      window: 3,
      softCap: 5,
    });
    expect((p.graph.eqns.find((e) => e.op === "Attention")!.params.schedule as { shape: string }).shape).toBe(
      "flash-prefill",
    );
  });

  test("an additive host mask (Mask slot) over plain K/V", () => {
    const p = run({ ...base, tq: 3, mask: "additive", state: false });
    expect(p.graph.eqns.find((e) => e.op === "Attention")!.params).toMatchObject({
      mask: "additive",
      maskApply: "add",
    });
  });

  test("multi-head without GQA (groups = 1)", () => {
    const p = run({ ...base, kv: 4 });
    expect(p.graph.eqns.find((e) => e.op === "Attention")!.params.groups).toBe(1);
  });
});

describe("gates refuse what they must", () => {
  test.each([
    ["a wrong mask (keeps keys after the query)", { ...base, mask: "wrong" as const }, "mask-form"],
    ["a finite mask fill", { ...base, mask: "finite-fill" as const }, "mask-fill"],
    ["a live length nothing bounds (no mask over a cache)", { ...base, mask: "none" as const }, "live-length"],
    ["a broadcast single KV head", { ...base, kv: 1, kvBroadcast: true }, "kv-head-broadcast"],
  ])("%s", (_n, c, check) => {
    const p = run(c);
    expect(opCounts(p.graph).Attention).toBeUndefined();
    expect(p.declines()).toEqual([expect.objectContaining({ pattern: "attention", check })]);
  });

  test("a RoPE chain rotating the wrong way is declined at its first failed check", () => {
    const b = new Builder();
    const x = b.const("x", "f32", [2, 8]);
    const x1 = b.slice(x, [0, 0], [2, 4]),
      x2 = b.slice(x, [0, 4], [2, 8]);
    const rot = b.concat([x1, b.neg(x2)], -1);
    b.output("y", b.add(b.mul(x, b.const("cos", "f32", [2, 8])), b.mul(rot, b.const("sin", "f32", [2, 8]))));
    const g = b.build();
    const p = compile(g, defaultTarget("wgpu"));
    expect(opCounts(p.graph).Rope).toBeUndefined();
    expect(p.declines()).toEqual([expect.objectContaining({ pattern: "rope", check: "neg-second-half" })]);
    expect(compareEval(g, p.graph, PLAN_OPS, bindingsFor(g, 2, {})).worst).toBeLessThanOrEqual(1e-6);
  });
});

describe("numerical declines", () => {
  test("an f32 -> bf16 -> f32 round trip is kept and reported as a narrowing cast", () => {
    const b = new Builder();
    const x = b.slot("Hidden", "x", "f32", [4]);
    b.output("y", b.mul(b.cast(b.cast(x, "bf16"), "f32"), 2));
    const g = b.build();
    const p = compile(g, defaultTarget("cuda"));
    expect(p.numericalDeclines()).toEqual([
      expect.objectContaining({ pass: "canonicalize", rule: "cast-roundtrip", reason: "narrowing-cast" }),
    ]);
    const { got } = compareEval(g, p.graph, PLAN_OPS, {
      consts: {},
      state: {},
      slots: { x: [1.00390625, 3.14159, -2.5e-3, 65504.7] },
    });
    // 1 + 2^-8 is not a bf16 value: it rounds (ties to even) to 1 before doubling.
    expect(got.outputs.y!.data[0]).toBe(2);
  });

  test("an attention chain computed in bf16 is declined (compute-dtype) and reported as narrow compute", () => {
    const b = new Builder();
    const q = b.const("q", "bf16", [1, 2, 1, 4]),
      k = b.const("k", "bf16", [1, 2, 5, 4]),
      v = b.const("v", "bf16", [1, 2, 5, 4]);
    const s = b.mul(b.matmul(q, b.transpose(k, [0, 1, 3, 2])), 0.5);
    const m = b.reduce("max", s, [-1], true);
    const e = b.exp(b.sub(s, m));
    b.output("y", b.matmul(b.div(e, b.sum(e, [-1], true)), v));
    const g = b.build();
    const p = compile(g, defaultTarget("cuda"));
    expect(p.declines()).toEqual([expect.objectContaining({ pattern: "attention", check: "compute-dtype" })]);
    expect(p.numericalDeclines().map((d) => d.reason)).toContain("narrow-compute");
    expect(compareEval(g, p.graph, PLAN_OPS, bindingsFor(g, 8, {})).worst).toBeLessThanOrEqual(1e-6);
  });

  test("x / 3 and x + 0 are kept and reported; x / 4 becomes x * 0.25", () => {
    const b = new Builder();
    const x = b.const("x", "f32", [6]);
    b.output("a", b.div(x, 3));
    b.output("b", b.add(x, 0));
    b.output("c", b.div(x, 4));
    const g = b.build();
    const p = compile(g, defaultTarget("cpu"));
    expect(p.numericalDeclines().map((d) => [d.pass, d.reason])).toEqual([
      ["canonicalize", "inexact-reciprocal"],
      ["canonicalize", "signed-zero"],
    ]);
    expect(p.passes().map((r) => r.name)).toContain("canonicalize");
    // -0 stays -0 through x + 0 only if the add is kept: -0 + 0 = +0.
    const { got } = compareEval(g, p.graph, PLAN_OPS, {
      consts: { x: Float32Array.from([-0, 1, 3, 1e-30, -7, 0.1]) },
      state: {},
      slots: {},
    });
    expect(Object.is(got.outputs.b!.data[0], 0)).toBe(true);
    expect(got.outputs.c!.data[4]).toBe(-1.75);
  });
});

// Routed experts: the dense expert chain the tracers emit (softmax router, top-k by argmax rounds, every expert on
// every token, gate-weighted sum) becomes two gate-routed IndexedMatMuls; the gates refuse other weightings.

import { describe, expect, test } from "vitest";
import { Builder, evaluate, type Graph, type PackedFormat, type Ref } from "@poot/graph-ir";
import { BACKEND_KINDS, PLAN_OPS, compile, defaultTarget } from "@poot/graph-plan";
import { bindingsFor, compareEval, opCounts } from "./util.js";

interface Moe {
  readonly T: number;
  readonly D: number;
  readonly F: number;
  readonly E: number;
  readonly topK: number;
  readonly renormalize?: boolean;
  readonly act?: "silu" | "gelu";
  /** "topk": the tracers' gates; "dense": softmax weights on every expert (must be refused). */
  readonly weighting?: "topk" | "dense" | "finite-fill";
  readonly wDtype?: "f32" | "bf16" | "q8_0";
}

/** GGUF Q8_0 (f16 scale, 32 int8 quants): GGUF files store experts stacked and packed. */
const Q8: PackedFormat = {
  name: "q8_0",
  blockSize: 32,
  bytesPerBlock: 34,
  decode: {
    op: "mul",
    a: { op: "load", type: "f16", offset: { op: "const", value: 0 } },
    b: { op: "load", type: "i8", offset: { op: "add", a: { op: "const", value: 2 }, b: { op: "i" } } },
  },
};

/** Q8_0 blocks with a 1/64 scale (f16 0x2400) and pseudo-random quants. */
function q8Bytes(elems: number, seed: number): Uint8Array {
  const u = new Uint8Array((elems / 32) * 34);
  for (let blk = 0; blk < elems / 32; blk++) {
    u[blk * 34 + 1] = 0x24;
    for (let i = 0; i < 32; i++) u[blk * 34 + 2 + i] = (seed * 31 + blk * 7 + i * 13) & 0xff;
  }
  return u;
}

/** The routed-experts MLP as packages/models' moe.ts traces it, plus a residual add. */
function moeGraph(m: Moe): Graph {
  const b = new Builder();
  const { T, D, F, E, topK } = m;
  const x = b.slot("Hidden", "x", "f32", [T, D]);
  const w = (key: string, shape: number[]): Ref =>
    m.wDtype === "q8_0"
      ? b.decodePacked(b.const(key, { packed: Q8 }, shape))
      : b.f32(b.const(key, m.wDtype ?? "f32", shape));
  const probs = b.softmax(b.linear(x, b.const("layers.0.router", "f32", [E, D])), -1);
  let gates: Ref;
  if (m.weighting === "dense") gates = probs;
  else {
    const experts = b.iota([T, E], 1, "i32");
    let left = probs;
    let chosen: Ref | null = null;
    for (let r = 0; r < topK; r++) {
      const hit = b.cmp("Eq", experts, b.argmax(left, 1, true));
      chosen = chosen === null ? hit : b.bit("Or", chosen, hit);
      left = b.select(hit, -Infinity, left);
    }
    gates = b.select(chosen!, probs, m.weighting === "finite-fill" ? 1e-3 : 0);
    if (m.renormalize === true) gates = b.div(gates, b.sum(gates, [1], true));
  }
  const wg = w("layers.0.experts.gate", [E, F, D]),
    wu = w("layers.0.experts.up", [E, F, D]),
    wd = w("layers.0.experts.down", [E, D, F]);
  const xe = b.broadcast(b.reshape(x, [1, T, D]), [E, T, D]);
  const g = b.matmul(xe, b.transpose(wg, [0, 2, 1]));
  const u = b.matmul(xe, b.transpose(wu, [0, 2, 1]));
  const act = m.act === "gelu" ? b.gelu(g, "tanh") : b.silu(g);
  const y = b.matmul(b.mul(act, u), b.transpose(wd, [0, 2, 1]));
  const moe = b.sum(b.mul(y, b.reshape(b.transpose(gates, [1, 0]), [E, T, 1])), [0]);
  b.output("y", b.add(x, moe));
  return b.build();
}

const xData = (m: Moe): number[] => Array.from({ length: m.T * m.D }, (_, i) => Math.sin(i * 0.7) * 2);

describe("routed experts as gate-routed IndexedMatMul", () => {
  for (const m of [
    { T: 1, D: 16, F: 8, E: 8, topK: 2 },
    { T: 3, D: 12, F: 10, E: 6, topK: 3, renormalize: true, act: "gelu" as const },
    { T: 5, D: 8, F: 6, E: 4, topK: 1, wDtype: "bf16" as const },
  ] satisfies Moe[]) {
    test(`T=${m.T} E=${m.E} top-${m.topK}${m.renormalize === true ? " renormalized" : ""}${m.wDtype === "bf16" ? " bf16 experts" : ""}: every target equals the dense chain under eval`, () => {
      const g = moeGraph(m);
      for (const kind of BACKEND_KINDS) {
        const p = compile(g, defaultTarget(kind), { mode: m.T > 1 ? "prefill" : "decode" });
        const imm = p.graph.eqns.filter((e) => e.op === "IndexedMatMul");
        expect(imm.length, kind).toBe(2);
        expect(imm.map((e) => (e.params.routing as { combine: string }).combine)).toEqual(["slots", "sum"]);
        // gate/up share x (two weights), the down projection absorbs the residual add.
        expect(imm[0]!.params.heads).toBe(2);
        expect((imm[1]!.params.routing as { post: unknown }).post).not.toBeNull();
        expect(p.passes().map((r) => r.name)).toContain("routed-experts");
        const { worst } = compareEval(g, p.graph, PLAN_OPS, bindingsFor(g, 3, { x: xData(m) }));
        expect(worst, kind).toBeLessThanOrEqual(1e-6);
      }
    });
  }

  test("packed (Q8_0) stacked experts, as GGUF stores them: IndexedMatMul reads the packed weights, equal to the dense chain", () => {
    const m: Moe = { T: 2, D: 32, F: 32, E: 4, topK: 2, wDtype: "q8_0" };
    const g = moeGraph(m);
    const bind = bindingsFor(g, 4, { x: xData(m) });
    const consts: Record<string, unknown> = { ...bind.consts };
    ["gate", "up", "down"].forEach((r, i) => {
      consts[`layers.0.experts.${r}`] = q8Bytes(m.E * m.D * m.F, i + 1);
    });
    const binds = { ...bind, consts } as unknown as typeof bind;
    for (const kind of ["cuda", "wgpu"] as const) {
      const p = compile(g, defaultTarget(kind), { mode: "prefill" });
      const imm = p.graph.eqns.filter((e) => e.op === "IndexedMatMul");
      expect(imm.length).toBe(2);
      expect(imm.every((e) => typeof p.graph.values[e.inputs[1] as number]!.dtype === "object")).toBe(true);
      expect(compareEval(g, p.graph, PLAN_OPS, binds).worst).toBe(0);
    }
  });

  test("decode: router + top-k + gates, gate/up and down+residual are three dispatches (was every expert densely)", () => {
    const m: Moe = { T: 1, D: 16, F: 8, E: 8, topK: 2 };
    const g = moeGraph(m);
    const on = compile(g, defaultTarget("cuda"));
    const off = compile(g, defaultTarget("cuda"), { routedExperts: false });
    expect(opCounts(off.graph).IndexedMatMul).toBeUndefined();
    expect(on.dispatchCount()).toBe(3);
    expect(on.dispatchCount()).toBeLessThan(off.dispatchCount());
  });

  test("a gate weighting that is not top-k (dense softmax weights) is refused and reported", () => {
    const g = moeGraph({ T: 2, D: 8, F: 6, E: 4, topK: 2, weighting: "dense" });
    const p = compile(g, defaultTarget("wgpu"));
    expect(opCounts(p.graph).IndexedMatMul).toBeUndefined();
    expect(p.declines()).toContainEqual(expect.objectContaining({ pattern: "experts", check: "weighting" }));
    expect(
      compareEval(g, p.graph, PLAN_OPS, bindingsFor(g, 5, { x: xData({ T: 2, D: 8, F: 6, E: 4, topK: 2 }) })).worst,
    ).toBeLessThanOrEqual(1e-6);
  });

  test("gates that are not zero outside the chosen experts (a finite fill) are refused", () => {
    const g = moeGraph({ T: 2, D: 8, F: 6, E: 4, topK: 2, weighting: "finite-fill" });
    const p = compile(g, defaultTarget("cuda"));
    expect(opCounts(p.graph).IndexedMatMul).toBeUndefined();
    expect(p.declines()).toContainEqual(expect.objectContaining({ pattern: "experts", check: "weighting" }));
  });

  test("an expert activation read outside the chain is refused (the rewrite would drop it)", () => {
    const b = new Builder();
    const T = 1,
      D = 8,
      F = 4,
      E = 4;
    const x = b.slot("Hidden", "x", "f32", [T, D]);
    const probs = b.softmax(b.linear(x, b.const("router", "f32", [E, D])), -1);
    const hit = b.cmp("Eq", b.iota([T, E], 1, "i32"), b.argmax(probs, 1, true));
    const gates = b.select(hit, probs, 0);
    const xe = b.broadcast(b.reshape(x, [1, T, D]), [E, T, D]);
    const h = b.silu(b.matmul(xe, b.transpose(b.const("wg", "f32", [E, F, D]), [0, 2, 1])));
    const y = b.matmul(h, b.transpose(b.const("wd", "f32", [E, D, F]), [0, 2, 1]));
    b.output("y", b.sum(b.mul(y, b.reshape(b.transpose(gates, [1, 0]), [E, T, 1])), [0]));
    b.output("h", h);
    const g = b.build();
    const p = compile(g, defaultTarget("cuda"));
    expect(opCounts(p.graph).IndexedMatMul).toBeUndefined();
    expect(p.declines()).toContainEqual(expect.objectContaining({ pattern: "experts", check: "users" }));
  });

  test("the reference semantics skip unchosen experts: an Inf in one of them no longer poisons the sum (dense gives NaN)", () => {
    const m: Moe = { T: 1, D: 4, F: 2, E: 4, topK: 1 };
    const g = moeGraph(m);
    const p = compile(g, defaultTarget("cuda"));
    const bind = bindingsFor(g, 9, { x: [1, 0.5, -0.25, 2] });
    const probs = evaluate(g, bind).outputs.y!;
    expect(Number.isFinite(probs.data[0])).toBe(true);
    // Poison every expert's down weights with Inf except the router's choice, found from the router alone.
    const router = bind.consts["layers.0.router"]!,
      x = [1, 0.5, -0.25, 2];
    const logits = [0, 1, 2, 3].map((e) => x.reduce((s, v, k) => s + v * router[e * 4 + k]!, 0));
    const top = logits.indexOf(Math.max(...logits));
    const wd = bind.consts["layers.0.experts.down"]!;
    for (let e = 0; e < 4; e++) if (e !== top) wd.fill(Infinity, e * 8, (e + 1) * 8);
    const dense = evaluate(g, bind).outputs.y!,
      routed = evaluate(p.graph, bind, { ops: PLAN_OPS }).outputs.y!;
    expect(Array.from(dense.data).some(Number.isNaN)).toBe(true);
    expect(Array.from(routed.data).every(Number.isFinite)).toBe(true);
  });
});

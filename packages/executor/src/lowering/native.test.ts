// The planner's count and the native lowering's launches of two-heads contractions agree, because both ask graph-plan's
// swigluRequest (decision 2360): SwiGLU heads are one launch, others two; a lowering that chose apart fails the check.
import { Builder, type Graph, type Ref } from "@poot/graph-ir";
import { swigluRequest, type KernelRequest, type Region } from "@poot/graph-plan";
import { nativeGemvName } from "@poot/kernelgen";
import { describe, expect, test } from "vitest";
import { lowerProgram } from "./lower.js";
import { defaultLowering } from "./targets.js";
import type { LoweringTarget } from "./types.js";

/** The MLP's gate/up pair over one A: `act(x Wgᵀ) · x Wuᵀ`, the up projection built first as in the Llama graphs. */
function mlp(act: (b: Builder, g: Ref) => Ref, tokens = 1): Graph {
  const b = new Builder();
  const x = b.slot("Token", "x", "f32", [tokens, 16]);
  const up = b.linear(x, b.const("wu", "f32", [24, 16]));
  const gate = b.linear(x, b.const("wg", "f32", [24, 16]));
  b.output("y", b.mul(act(b, gate), up));
  return b.build();
}

const silu = (b: Builder, g: Ref): Ref => b.silu(g);
const gelu = (b: Builder, g: Ref): Ref => b.gelu(g);

/** The CPU's lowering with f32 native GEMVs: `symbols` the library's, `swigluCaps` whether the caps list SwiGLU. */
function cpuTarget(symbols: readonly string[], swigluCaps: boolean): LoweringTarget {
  const base = defaultLowering("wasm");
  const plan = { ...base.plan, residualOnlyWeights: ["f32"], ...(swigluCaps ? { swigluWeights: ["f32"] } : {}) };
  return { ...base, plan, native: { symbols: [...symbols].sort(), fast: false, library: "test" } };
}

const HEADS2 = [nativeGemvName("f32", "none"), nativeGemvName("f32", "heads2")];
const SWIGLU = [...HEADS2, nativeGemvName("f32", "swiglu")];

/** Lowers `g` and throws unless the step's launches are the planner's dispatches; returns their count. */
function agreedLaunches(g: Graph, target: LoweringTarget): number {
  const p = lowerProgram(g, target, { name: "mlp" });
  const launched = p.launches.filter((l) => l.phase === "step").length;
  if (launched !== p.predicted.step)
    throw new Error(`planner counts ${p.predicted.step} dispatches, the lowering launches ${launched}`);
  return launched;
}

describe("two-heads SwiGLU: planner and native lowering agree (swigluRequest, decision 2360)", () => {
  test.each([1, 5])("%i token(s): SwiGLU is one launch, GeGLU or a library without swiglu two", (tokens) => {
    expect(agreedLaunches(mlp(silu, tokens), cpuTarget(SWIGLU, true))).toBe(1);
    expect(agreedLaunches(mlp(gelu, tokens), cpuTarget(SWIGLU, true))).toBe(2);
    expect(agreedLaunches(mlp(silu, tokens), cpuTarget(HEADS2, false))).toBe(2);
  });

  test("planted: caps that promise SwiGLU to a library without it make the two disagree, and the check fails", () => {
    expect(() => agreedLaunches(mlp(silu), cpuTarget(HEADS2, true))).toThrow(/planner counts 1 .* launches 2/);
  });

  test("swigluRequest refuses what the swiglu GEMV cannot write: a third input, an f16 or strided output, 3 heads", () => {
    const shape = [1, 24];
    const access = (value: number, dtype: "f32" | "f16" = "f32", strides = [24, 1]) =>
      ({ value, root: value, dtype, shape, strides, offset: 0 }) as const;
    const epilogue = swigluRegion();
    const req: KernelRequest = {
      kind: "gemv",
      op: "ContractionEpilogue",
      inputs: [access(0), access(1), access(2)],
      output: access(3),
      params: { heads: 2, transposeB: true, epilogue },
      region: epilogue,
      emulated16: false,
    };
    expect(swigluRequest(req)).toBe(1);
    expect(swigluRequest({ ...req, inputs: [...req.inputs, access(4)] })).toBeNull();
    expect(swigluRequest({ ...req, output: access(3, "f16") })).toBeNull();
    expect(swigluRequest({ ...req, output: access(3, "f32", [48, 2]) })).toBeNull();
    expect(swigluRequest({ ...req, params: { ...req.params, heads: 3 } })).toBeNull();
    expect(swigluRequest({ ...req, params: { ...req.params, transposeB: false } })).toBeNull();
  });
});

/** `silu(in1) · in0` as graph-ir's builder writes it (the Llama graphs' order: up first). */
function swigluRegion(): Region {
  const n = (op: string, args: unknown[]) => ({ op, args, params: {}, dtype: "f32", shape: [1, 24] });
  return {
    nodes: [
      n("Neg", [{ in: 1 }]),
      n("Exp", [{ node: 0 }]),
      n("Add", [{ node: 1 }, { lit: 1, dtype: "f32" }]),
      n("Div", [{ in: 1 }, { node: 2 }]),
      n("Mul", [{ in: 0 }, { node: 3 }]),
    ],
    result: 4,
  } as Region;
}

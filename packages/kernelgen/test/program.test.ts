// End to end through graph-plan: small decoder graphs are compiled for a target, every plan's KernelRequest is
// synthesized (synthesizeRequest) and run in the interpreter, and the outputs and KV states are compared with
// graph-ir's float64 evaluation of the original primitive graph.

import { Builder, evaluate } from "@poot/graph-ir";
import { compile, defaultTarget } from "@poot/graph-plan";
import { describe, expect, it } from "vitest";
import { interpretProgram, synthCapsFrom } from "@poot/kernelgen";
import { BASE, bindings, decoder } from "./decoder.js";
import { Q4_0, Q8_0 } from "./formats.js";
import { expectClose, expectExact } from "./helpers.js";

describe("graph-plan programs run through synthesized kernels", () => {
  for (const [label, d, pos, kind, contraction] of [
    ["decode, f32 weights, cuda-like caps (subgroups)", BASE, 5, "cuda", "gemv"],
    ["decode, bf16 weights, wgpu-like caps", { ...BASE, wDtype: "bf16" }, 11, "wgpu", "gemv"],
    ["prefill of 10 tokens (GEMM paths)", { ...BASE, T: 10 }, 0, "vulkan", "gemm"],
    [
      "decode with Q8_0 weights (packed contractions, packed embedding rows)",
      { ...BASE, ffn: 64, wDtype: Q8_0 },
      3,
      "rocm",
      "dequant-gemv",
    ],
    [
      "prefill of 9 tokens with Q4_0 weights (dequant GEMM)",
      { ...BASE, T: 9, ffn: 64, wDtype: Q4_0 },
      2,
      "cpu",
      "dequant-gemm",
    ],
  ] as const) {
    it(label, () => {
      const g = decoder(d);
      const target = defaultTarget(kind);
      const prog = compile(g, target, { mode: d.T > 1 ? "prefill" : "decode", preferImported: false });
      const bind = bindings(g, d, pos, 17);
      const run = interpretProgram(prog, bind, { caps: synthCapsFrom(target.caps as never) });
      const ref = evaluate(g, bind);
      const want = ref.outputs.logits!.data;
      // Logits are sums over 32-64 products of O(1) values: 2e-5 relative to the largest logit covers f32 order.
      const scale = Math.max(...Array.from(want, Math.abs));
      expectClose(run.outputs.logits as Float32Array, want, scale, 2e-5);
      for (const key of ["k_cache", "v_cache"])
        expectClose(run.state[key] as Float32Array, ref.state[key]!.data, 1, 1e-5);
      expectExact(run.outputs.next as Int32Array, ref.outputs.next!.data);
      // The layer's contractions (q, k, v — one group dispatch in decode, decision 0402 —, o, gate/up — possibly fused
      // into one —, down, head) ran as the expected kind.
      expect(run.kinds[contraction]).toBeGreaterThanOrEqual(d.T > 1 ? 7 : 5);
      expect(run.kinds.attention).toBe(1);
    });
  }
});

describe("flash-decode attention in a whole program", () => {
  it("decode at position 260 of a 272-token cache with cuda caps that allow split attention (2 slices of 128 lanes)", () => {
    const d = { ...BASE, maxSeq: 272 };
    const g = decoder(d);
    const target = defaultTarget("cuda");
    const prog = compile(g, target, { mode: "decode", preferImported: false });
    const bind = bindings(g, d, 260, 29);
    const caps = synthCapsFrom(target.caps as never);
    const split = interpretProgram(prog, bind, { caps: { ...caps, splitAttention: true } });
    const single = interpretProgram(prog, bind, { caps });
    // The split variant ran: one more dispatch (the combine) for the one attention plan.
    expect(split.dispatches).toBe(single.dispatches + 1);
    const ref = evaluate(g, bind);
    const want = ref.outputs.logits!.data;
    expectClose(split.outputs.logits as Float32Array, want, Math.max(...Array.from(want, Math.abs)), 2e-5);
    for (const key of ["k_cache", "v_cache"])
      expectClose(split.state[key] as Float32Array, ref.state[key]!.data, 1, 1e-5);
    expectExact(split.outputs.next as Int32Array, ref.outputs.next!.data);
    expect(split.kinds.attention).toBe(1);
  });
});

describe("graph-plan programs with imported kernels", () => {
  it("decode with imported GEMVs and a two-stage argmax, the rest synthesized", () => {
    const d = BASE;
    const g = decoder(d);
    const target = defaultTarget("cuda");
    const prog = compile(g, target, { mode: "decode", argmaxSplitAbove: 16, argmaxChunk: 16 });
    const bind = bindings(g, d, 4, 23);
    const run = interpretProgram(prog, bind, { caps: synthCapsFrom(target.caps as never) });
    const ref = evaluate(g, bind);
    const want = ref.outputs.logits!.data;
    expectClose(run.outputs.logits as Float32Array, want, Math.max(...Array.from(want, Math.abs)), 2e-5);
    expectExact(run.outputs.next as Int32Array, ref.outputs.next!.data);
    expect(run.kinds["imported:argmax_chunk"]).toBe(1);
    expect(run.kinds["imported:argmax_combine"]).toBe(1);
    expect(Object.keys(run.kinds).filter((k) => k.startsWith("imported:gemv_f32_")).length).toBeGreaterThan(0);
  });
});

describe("interpretProgram state and output views", () => {
  it("a rolling-window state whose state_out is a slice view of a kernel's output (conv-state style), over three steps", () => {
    const b = new Builder();
    const x = b.slot("Token", "x", "f32", [2, 1]);
    const s = b.state("win", "f32", [2, 3]);
    const cat = b.concat([s, x], 1);
    const next = b.slice(cat, [0, 1], [2, 4]);
    b.setState(s, next);
    b.output("y", b.sum(b.mul(cat, cat), [1]));
    const g = b.build();
    const target = defaultTarget("wgpu");
    const prog = compile(g, target, { mode: "decode", preferImported: false });
    let st: Record<string, ArrayLike<number>> = { win: Float32Array.of(1, 2, 3, 4, 5, 6) };
    let ref: Record<string, ArrayLike<number>> = { win: Float32Array.of(1, 2, 3, 4, 5, 6) };
    for (const step of [0.5, -2, 7]) {
      const slots = { x: Float32Array.of(step, step * 2) };
      const run = interpretProgram(prog, { slots, state: st });
      const want = evaluate(g, { slots, state: ref });
      expectExact(run.state.win as Float32Array, want.state.win!.data);
      expectClose(
        run.outputs.y as Float32Array,
        want.outputs.y!.data,
        Array.from(want.outputs.y!.data, Math.abs),
        1e-6,
      );
      st = run.state as Record<string, ArrayLike<number>>;
      ref = { win: Float32Array.from(want.state.win!.data) };
    }
  });
});

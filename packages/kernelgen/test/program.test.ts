// End to end through graph-plan: small decoder graphs are compiled for a target, every plan's KernelRequest is
// synthesized (synthesizeRequest) and run in the interpreter, and the outputs and KV states are compared with
// graph-ir's float64 evaluation of the original primitive graph.

import { evaluate } from "@poot/graph-ir";
import { compile, defaultTarget } from "@poot/graph-plan";
import { describe, expect, it } from "vitest";
import { synthCapsFrom } from "@poot/kernelgen";
import { BASE, bindings, decoder } from "./decoder.js";
import { Q4_0, Q8_0 } from "./formats.js";
import { expectClose, expectExact } from "./helpers.js";
import { runProgram } from "./interp-program.js";


describe("graph-plan programs run through synthesized kernels", () => {
  for (const [label, d, pos, kind, contraction] of [
    ["decode, f32 weights, cuda-like caps (subgroups)", BASE, 5, "cuda", "gemv"],
    ["decode, bf16 weights, wgpu-like caps", { ...BASE, wDtype: "bf16" }, 11, "wgpu", "gemv"],
    ["prefill of 10 tokens (GEMM paths)", { ...BASE, T: 10 }, 0, "vulkan", "gemm"],
    ["decode with Q8_0 weights (packed contractions, packed embedding rows)", { ...BASE, ffn: 64, wDtype: Q8_0 }, 3, "rocm", "dequant-gemv"],
    ["prefill of 9 tokens with Q4_0 weights (dequant GEMM)", { ...BASE, T: 9, ffn: 64, wDtype: Q4_0 }, 2, "cpu", "dequant-gemm"],
  ] as const) {
    it(label, () => {
      const g = decoder(d);
      const target = defaultTarget(kind);
      const prog = compile(g, target, { mode: d.T > 1 ? "prefill" : "decode", preferImported: false });
      const bind = bindings(g, d, pos, 17);
      const run = runProgram(prog, bind, synthCapsFrom(target.caps as never));
      const ref = evaluate(g, bind);
      const want = ref.outputs.logits!.data;
      // Logits are sums over 32-64 products of O(1) values: 2e-5 relative to the largest logit covers f32 order.
      const scale = Math.max(...Array.from(want, Math.abs));
      expectClose(run.outputs.logits as Float32Array, want, scale, 2e-5);
      for (const key of ["k_cache", "v_cache"]) expectClose(run.state[key] as Float32Array, ref.state[key]!.data, 1, 1e-5);
      expectExact(run.outputs.next as Int32Array, ref.outputs.next!.data);
      // Every layer contraction (q, k, v, o, gate, up, down, head) ran through the expected synthesizer, and so did attention.
      expect(run.kinds[contraction]).toBe(8);
      expect(run.kinds.attention).toBe(1);
    });
  }
});

describe("graph-plan programs with imported kernels", () => {
  it("decode with imported GEMVs and a two-stage argmax, the rest synthesized", () => {
    const d = BASE;
    const g = decoder(d);
    const target = defaultTarget("cuda");
    const prog = compile(g, target, { mode: "decode", argmaxSplitAbove: 16, argmaxChunk: 16 });
    const bind = bindings(g, d, 4, 23);
    const run = runProgram(prog, bind, synthCapsFrom(target.caps as never));
    const ref = evaluate(g, bind);
    const want = ref.outputs.logits!.data;
    expectClose(run.outputs.logits as Float32Array, want, Math.max(...Array.from(want, Math.abs)), 2e-5);
    expectExact(run.outputs.next as Int32Array, ref.outputs.next!.data);
    expect(run.kinds["imported:argmax_chunk"]).toBe(1);
    expect(run.kinds["imported:argmax_combine"]).toBe(1);
    expect(Object.keys(run.kinds).filter((k) => k.startsWith("imported:gemv_f32_")).length).toBeGreaterThan(0);
  });
});

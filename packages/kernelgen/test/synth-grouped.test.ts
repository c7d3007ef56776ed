// Horizontal groups (decision 0402) end to end: q/k/v of a decoder compiled with horizontalFusion "grouped" (the
// default) run as one synthesized dispatch (block GEMVs, or inline accumulators for serial threads and packed
// weights) in the interpreter, and the logits and KV caches equal graph-ir's float64 evaluation of the primitive graph.

import { evaluate } from "@poot/graph-ir";
import { compile, defaultTarget } from "@poot/graph-plan";
import { describe, expect, it } from "vitest";
import { interpretProgram, planKernel, synthCapsFrom, type SynthCaps } from "@poot/kernelgen";
import { BASE, bindings, decoder } from "./decoder.js";
import { Q8_0 } from "./formats.js";
import { expectClose, expectExact } from "./helpers.js";

describe("a q/k/v group runs as one dispatch and equals eval", () => {
  for (const [label, d, pos, kind, serial, block, vectorLoads] of [
    ["f32 weights, cuda caps (block GEMVs on subgroups)", BASE, 5, "cuda", false, true, false],
    [
      "bf16 weights, K = 256, cuda caps with 16-byte loads (the CUDA executor's)",
      { ...BASE, hidden: 256, wDtype: "bf16" },
      9,
      "cuda",
      false,
      true,
      true,
    ],
    ["bf16 weights, wgpu caps (block GEMVs)", { ...BASE, wDtype: "bf16" }, 11, "wgpu", false, true, false],
    ["f32 weights, serial threads (the CPU backend: inline accumulators)", BASE, 7, "cpu", true, false, false],
    ["Q8_0 weights (packed: inline accumulators)", { ...BASE, ffn: 64, wDtype: Q8_0 }, 3, "rocm", false, false, false],
  ] as const) {
    it(label, () => {
      const g = decoder(d);
      const target = defaultTarget(kind);
      const plain = compile(g, target, { preferImported: false, horizontalFusion: "shared-epilogue" });
      const prog = compile(g, target, { preferImported: false });
      const grouped = prog
        .plans()
        .flatMap((p) =>
          p.kernel.provenance === "synthesized" && p.kernel.request.group !== undefined ? [p.kernel] : [],
        );
      expect(grouped.map((k) => k.request.group?.length)).toEqual([3]);
      expect(prog.plans().filter((p) => p.kernel.provenance === "none" && p.kernel.reason === "grouped").length).toBe(
        2,
      );
      expect(prog.dispatchCount()).toBe(plain.dispatchCount() - 2);
      const bind = bindings(g, d, pos, 23);
      const base = synthCapsFrom(target.caps as never);
      const caps: SynthCaps = {
        ...base,
        ...(serial ? { serialThreads: true } : {}),
        ...(vectorLoads ? { vectorLoads: true } : {}),
      };
      // The form the label names: block GEMVs keep their accumulators in workgroup memory.
      const gk = planKernel(grouped[0]!, caps, "g").kernel;
      expect(gk.shared.some((a) => a.name === "acc")).toBe(block);
      // 16-byte loads: every member's weight is read as vec4<u32> words.
      if (vectorLoads) expect(gk.buffers.filter((b) => b.elem === "vec4<u32>").length).toBe(3);
      const run = interpretProgram(prog, bind, { caps });
      expect(run.dispatches).toBe(interpretProgram(plain, bind, { caps }).dispatches - 2);
      const ref = evaluate(g, bind);
      const want = ref.outputs.logits!.data;
      expectClose(run.outputs.logits as Float32Array, want, Math.max(...Array.from(want, Math.abs)), 2e-5);
      for (const key of ["k_cache", "v_cache"])
        expectClose(run.state[key] as Float32Array, ref.state[key]!.data, 1, 1e-5);
      expectExact(run.outputs.next as Int32Array, ref.outputs.next!.data);
    });
  }
});

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
  for (const [label, d, pos, kind, serial, block] of [
    ["f32 weights, cuda caps (block GEMVs on subgroups)", BASE, 5, "cuda", false, true],
    ["bf16 weights, wgpu caps (block GEMVs)", { ...BASE, wDtype: "bf16" }, 11, "wgpu", false, true],
    ["f32 weights, serial threads (the CPU backend: inline accumulators)", BASE, 7, "cpu", true, false],
    ["Q8_0 weights (packed: inline accumulators)", { ...BASE, ffn: 64, wDtype: Q8_0 }, 3, "rocm", false, false],
  ] as const) {
    it(label, () => {
      const g = decoder(d);
      const target = defaultTarget(kind);
      const plain = compile(g, target, { preferImported: false, horizontalFusion: "shared-epilogue" });
      const prog = compile(g, target, { preferImported: false });
      const grouped = prog.plans().flatMap((p) => (p.kernel.provenance === "synthesized" && p.kernel.request.group !== undefined ? [p.kernel] : []));
      expect(grouped.map((k) => k.request.group?.length)).toEqual([3]);
      expect(prog.plans().filter((p) => p.kernel.provenance === "none" && p.kernel.reason === "grouped").length).toBe(2);
      expect(prog.dispatchCount()).toBe(plain.dispatchCount() - 2);
      const bind = bindings(g, d, pos, 23);
      const base = synthCapsFrom(target.caps as never);
      const caps: SynthCaps = serial ? { ...base, serialThreads: true } : base;
      // The form the label names: block GEMVs keep their accumulators in workgroup memory.
      expect(planKernel(grouped[0]!, caps, "g").kernel.shared.some((a) => a.name === "acc")).toBe(block);
      const run = interpretProgram(prog, bind, { caps });
      expect(run.dispatches).toBe(interpretProgram(plain, bind, { caps }).dispatches - 2);
      const ref = evaluate(g, bind);
      const want = ref.outputs.logits!.data;
      expectClose(run.outputs.logits as Float32Array, want, Math.max(...Array.from(want, Math.abs)), 2e-5);
      for (const key of ["k_cache", "v_cache"]) expectClose(run.state[key] as Float32Array, ref.state[key]!.data, 1, 1e-5);
      expectExact(run.outputs.next as Int32Array, ref.outputs.next!.data);
    });
  }
});

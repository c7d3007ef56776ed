// Contractions with neighbour-reading epilogues (q/k with RoPE, k/v with the in-place KV-cache write) on the CPU caps
// (serial threads + SIMD loads): each dot product is a load4 loop (adapter/contraction-cpu.ts), packed weights decoded
// four at a time. A decoder compiled by graph-plan for the cpu target runs in the interpreter with poisoned fresh
// buffers and is compared with graph-ir's float64 eval. They take the block form (one dot product per output into
// workgroup memory, then the epilogue), so RoPE reads each weight row once.

import { evaluate } from "@poot/graph-ir";
import type { Region } from "@poot/graph-plan";
import { compile, defaultTarget } from "@poot/graph-plan";
import { describe, expect, it } from "vitest";
import { cpuSynthCaps, interpretProgram, planKernel } from "@poot/kernelgen";
import { BASE, bindings, decoder } from "./decoder.js";
import type { Dims } from "./decoder.js";
import { Q4_0, Q8_0 } from "./formats.js";
import { expectClose, expectExact } from "./helpers.js";

describe("CPU SIMD dot products in neighbour-reading contractions, end to end against eval", () => {
  const cases: [string, Dims, number][] = [
    ["f32 weights, K = 32", BASE, 5],
    [
      "bf16 weights, ragged K (hidden 36: a 4-wide tail loop)",
      { ...BASE, hidden: 36, heads: 2, kvHeads: 2, headDim: 10, wDtype: "bf16" },
      3,
    ],
    ["Q8_0 weights (hidden 64)", { ...BASE, hidden: 64, ffn: 64, wDtype: Q8_0 }, 4],
    ["Q4_0 weights (hidden 32)", { ...BASE, ffn: 64, wDtype: Q4_0 }, 2],
  ];
  for (const [label, d, pos] of cases) {
    it(label, () => {
      const g = decoder(d);
      const caps = cpuSynthCaps();
      // As the CPU executor compiles: q/k/v not grouped (decision 0402 §7), so each contraction has its own kernel.
      const prog = compile(g, defaultTarget("cpu"), {
        mode: "decode",
        preferImported: false,
        horizontalFusion: "shared-epilogue",
      });
      const neighbour = prog.plans().flatMap((plan, i) => {
        const src = plan.kernel;
        if (src.provenance !== "synthesized") return [];
        const epi = (src.request.params as { epilogue?: Region | null }).epilogue ?? null;
        return epi !== null && epi.nodes.some((n) => n.op === "Rope" || n.op === "DynamicUpdateSlice")
          ? [planKernel(src, caps, `p${i}`)]
          : [];
      });
      expect(neighbour.length).toBeGreaterThan(0);
      for (const k of neighbour) expect(JSON.stringify(k.kernel.body)).toContain('"k":"load4"');
      // The serial block form: each output's dot product once into workgroup memory, then the epilogue reads it there
      // (RoPE's partner no longer recomputed; docs/decisions/0953).
      for (const k of neighbour) expect(k.kernel.shared.map((s) => s.name)).toContain("acc");
      const bind = bindings(g, d, pos, 17);
      const run = interpretProgram(prog, bind, { caps });
      const ref = evaluate(g, bind);
      const want = ref.outputs.logits!.data;
      expectClose(run.outputs.logits as Float32Array, want, Math.max(...Array.from(want, Math.abs)), 2e-5);
      for (const key of ["k_cache", "v_cache"])
        expectClose(run.state[key] as Float32Array, ref.state[key]!.data, 1, 1e-5);
      expectExact(run.outputs.next as Int32Array, ref.outputs.next!.data);
    });
  }
});

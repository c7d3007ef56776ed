// Which kernel an imported plan gets on a device (issue #22, decision 2200): the library's GEMVs read one scalar per
// lane, so with 16-byte vector loads (CUDA) the synthesized GEMV serves them; elsewhere, and for the other imported
// kernels, the library's kernel stays. Whole decode programs run in the interpreter against graph-ir's float64 eval.

import { evaluate } from "@poot/graph-ir";
import { compile, defaultTarget } from "@poot/graph-plan";
import { describe, expect, it } from "vitest";
import { interpretProgram, missingImportedAssets, planKernel, synthCapsFrom, synthesizesFaster } from "@poot/kernelgen";
import type { SynthCaps } from "@poot/kernelgen";
import { BASE, bindings, decoder } from "./decoder.js";
import { expectClose, expectExact } from "./helpers.js";

const d = { ...BASE, hidden: 256, wDtype: "bf16" as const };

describe("imported plans on a device with vector loads", () => {
  const g = decoder(d);
  const target = defaultTarget("cuda");
  const base = synthCapsFrom(target.caps as never);
  const prog = compile(g, target, { mode: "decode" });
  const imported = prog.plans().flatMap((p, i) => (p.kernel.provenance === "imported" ? [{ i, src: p.kernel }] : []));

  it("the decoder's plain GEMV (the lm_head) is planned as the imported gemv_bf16_nk", () => {
    expect(imported.map((x) => x.src.name)).toContain("gemv_bf16_nk");
  });

  it.each([
    ["without vector loads: the library's kernel", {}, "gemv_bf16_nk"],
    ["with vector loads: synthesized, 16-byte words of the weight", { vectorLoads: true }, "synthesized"],
  ] as const)("%s", (_label, extra, want) => {
    const caps: SynthCaps = { ...base, ...extra };
    for (const { i, src } of imported) {
      const k = planKernel(src, caps, `p${i}`);
      if (!src.name.startsWith("gemv_")) {
        expect(k.kernel.name).toBe(src.name);
        continue;
      }
      if (want === "synthesized") {
        expect(k.kernel.name).not.toBe(src.name);
        expect(k.kernel.buffers.map((b) => b.elem)).toContain("vec4<u32>");
      } else expect(k.kernel.name).toBe(want);
    }
    const bind = bindings(g, d, 3, 17);
    const run = interpretProgram(prog, bind, { caps });
    const ref = evaluate(g, bind);
    const want32 = ref.outputs.logits!.data;
    expectClose(run.outputs.logits as Float32Array, want32, Math.max(...Array.from(want32, Math.abs)), 2e-5);
    expectExact(run.outputs.next as Int32Array, ref.outputs.next!.data);
  });

  it("synthesizesFaster names the GEMVs (vector loads) and the bf16 tiled GEMM (a bf16 matrix unit) only", () => {
    const mma = { ...base, subgroupSize: 32, matrixShapes: [{ m: 16, n: 8, k: 16, input: "bf16" }] };
    expect(synthesizesFaster("gemv_bf16_nk", { ...base, vectorLoads: true })).toBe(true);
    expect(synthesizesFaster("gemv_f32_kn", { ...base, vectorLoads: true })).toBe(true);
    expect(synthesizesFaster("gemv_bf16_nk", { ...base, vectorLoads: false })).toBe(false);
    expect(synthesizesFaster("gemm_tiled_bf16", mma)).toBe(true);
    expect(synthesizesFaster("gemm_tiled_bf16", { ...base, matrixShapes: [] })).toBe(false);
    expect(synthesizesFaster("gemm_tiled_f32", mma)).toBe(false);
    expect(synthesizesFaster("argmax_chunk", { ...mma, vectorLoads: true })).toBe(false);
  });
});

describe("missingImportedAssets", () => {
  it("is empty where the package's assets are laid out as installed", () => {
    expect(missingImportedAssets()).toEqual([]);
  });
});

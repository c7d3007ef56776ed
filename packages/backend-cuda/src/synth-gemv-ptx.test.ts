// kernelgen's GEMV as the CUDA executor synthesizes it (caps.vectorLoads, decision 0803) at Llama-3.2-1B shapes:
// every global load of the PTX is a 16-byte vector load, and ptxas accepts it (skipped, saying so, without ptxas).
import { lowerPtx } from "@poot/codegen";
import { synthesizeGemv, type SynthCaps } from "@poot/kernelgen";
import { describe, expect, it } from "vitest";
import { expectPtxasAccepts, H200_LIMITS } from "../test/ptx.js";
import { cudaCaps } from "./device.js";

const caps: SynthCaps = { maxWorkgroup: 1024, subgroupSize: 32, sharedBytes: 49152, vectorLoads: true };
// Words of W each lane loads per trip (decision 0805): 8 with one head, 4 each for gate and up.
const shapes = [
  ["q_proj 2048 x 2048", 2048, 2048, 1, 8],
  ["gate/up 8192 x 2048 (two heads)", 2048, 8192, 2, 4],
  ["down 2048 x 8192", 8192, 2048, 1, 8],
] as const;

describe("kernelgen GEMV with 16-byte loads, lowered to PTX", () => {
  it.each(shapes)(
    "%s: W and x are read only with ld.global.v4, every word of a trip before the first fma",
    (_, K, N, heads, unroll) => {
      const s = synthesizeGemv({ name: "gemv", K, N, heads, weight: { dtype: "bf16", layout: "nk" } }, caps);
      const lines = lowerPtx(s.kernel, cudaCaps(H200_LIMITS), { arch: "sm_90" }).text!.split("\n");
      const loads = lines.filter((l) => /\bld\.global\./.test(l));
      // Per trip: `unroll` 16-byte words of each weight row, two vec4<f32> of x per word.
      expect(loads).toHaveLength(unroll * heads + 2 * unroll);
      expect(loads.every((l) => /ld\.global\.v4\.(b32|f32|u32)/.test(l))).toBe(true);
      const firstFma = lines.findIndex((l) => /\bfma\.rn\.f32\b/.test(l));
      const weightLoads = lines
        .map((l, i) => [l, i] as const)
        .filter(([l]) => /ld\.global\.v4\.(b32|u32)/.test(l))
        .map(([, i]) => i);
      expect(weightLoads).toHaveLength(unroll * heads);
      expect(Math.max(...weightLoads)).toBeLessThan(firstFma);
    },
  );

  it("assembles with ptxas for sm_80 and sm_90", async () => {
    const s = synthesizeGemv(
      { name: "gemv", K: 2048, N: 8192, heads: 2, weight: { dtype: "bf16", layout: "nk" } },
      caps,
    );
    await expectPtxasAccepts(s.kernel);
  });
});

// kernelgen's GEMV as the CUDA executor synthesizes it (caps.vectorLoads, decision 0803) at Llama-3.2-1B shapes:
// every global load of the PTX is a 16-byte vector load, and ptxas accepts it (skipped, saying so, without ptxas).
import { lowerPtx, validatePtx } from "@poot/codegen";
import { synthesizeGemv, type SynthCaps } from "@poot/kernelgen";
import { describe, expect, it } from "vitest";
import { cudaCaps, type CudaDeviceInfo } from "./device.js";

const info = { computeCapability: [9, 0], maxThreadsPerBlock: 1024, warpSize: 32, sharedBytesPerBlock: 49152 } as unknown as CudaDeviceInfo;
const caps: SynthCaps = { maxWorkgroup: 1024, subgroupSize: 32, sharedBytes: 49152, vectorLoads: true };
const shapes = [
  ["q_proj 2048 x 2048", 2048, 2048, 1],
  ["gate/up 8192 x 2048 (two heads)", 2048, 8192, 2],
  ["down 2048 x 8192", 8192, 2048, 1],
] as const;

describe("kernelgen GEMV with 16-byte loads, lowered to PTX", () => {
  it.each(shapes)("%s: W and x are read only with ld.global.v4", (_, K, N, heads) => {
    const s = synthesizeGemv({ name: "gemv", K, N, heads, weight: { dtype: "bf16", layout: "nk" } }, caps);
    const text = lowerPtx(s.kernel, cudaCaps(info), { arch: "sm_90" }).text!;
    const loads = text.split("\n").filter((l) => /\bld\.global\./.test(l));
    // Per iteration: two 16-byte words of each weight row, two vec4<f32> of x per word.
    expect(loads).toHaveLength(2 * heads + 4);
    expect(loads.every((l) => /ld\.global\.v4\.(b32|f32|u32)/.test(l))).toBe(true);
  });

  it("assembles with ptxas for sm_80 and sm_90", async () => {
    const s = synthesizeGemv({ name: "gemv", K: 2048, N: 8192, heads: 2, weight: { dtype: "bf16", layout: "nk" } }, caps);
    for (const arch of ["sm_80", "sm_90"]) {
      const r = await validatePtx(lowerPtx(s.kernel, cudaCaps(info), { arch }).text!, { arch });
      if (r.status === "unavailable") {
        console.log(`ptxas check skipped: ${r.reason}`);
        return;
      }
      expect(r.status === "ok" ? "ok" : r.message).toBe("ok");
    }
  });
});

// The GEMVs' PTX: accepted by ptxas for sm_80 and sm_90 (skipped, saying so, where ptxas is missing), and
// every global load is a 16-byte vector load, the property their bandwidth depends on.
import { lowerPtx, validatePtx } from "@poot/codegen";
import { describe, expect, it } from "vitest";
import { cudaCaps, type CudaDeviceInfo } from "@poot/backend-cuda";
import { gemvRowsBf16, gemvRowsBf16x2, gemvRowsF32 } from "./row-gemvs.js";

const info = {
  computeCapability: [9, 0],
  maxThreadsPerBlock: 1024,
  warpSize: 32,
  sharedBytesPerBlock: 49152,
} as unknown as CudaDeviceInfo;
const kernels = [
  ["gemv_rows_bf16", gemvRowsBf16, 3],
  ["gemv_rows_bf16_x2", gemvRowsBf16x2, 6],
  ["gemv_rows_f32", gemvRowsF32, 2],
] as const;

describe("row GEMV PTX", () => {
  it.each(kernels)("%s loads W and x only with ld.global.v4 (%i per step)", (_, kernel, loads) => {
    const text = lowerPtx(kernel, cudaCaps(info), { arch: "sm_90" }).text!;
    const globalLoads = text.split("\n").filter((l) => /\bld\.global\./.test(l));
    expect(globalLoads).toHaveLength(loads);
    expect(globalLoads.every((l) => /ld\.global\.v4\.(b32|f32|u32)/.test(l))).toBe(true);
  });

  it.each(kernels)("%s assembles with ptxas for sm_80 and sm_90", async (_, kernel) => {
    for (const arch of ["sm_80", "sm_90"]) {
      const code = lowerPtx(kernel, cudaCaps(info), { arch });
      const r = await validatePtx(code.text!, { arch });
      if (r.status === "unavailable") {
        console.log(`ptxas check skipped: ${r.reason}`);
        return;
      }
      expect(r.status === "ok" ? "ok" : r.message).toBe("ok");
    }
  });
});

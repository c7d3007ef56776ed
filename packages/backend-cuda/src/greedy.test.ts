// greedy_next's PTX (the kernel is @poot/kernelgen's, tested there under the interpreter) through ptxas.
import { lowerPtx, validatePtx } from "@poot/codegen";
import { greedyNext } from "@poot/kernelgen";
import { describe, expect, it } from "vitest";
import { cudaCaps, type CudaDeviceInfo } from "./device.js";

describe("greedy_next PTX", () => {
  const info = {
    computeCapability: [9, 0],
    maxThreadsPerBlock: 1024,
    warpSize: 32,
    sharedBytesPerBlock: 49152,
  } as unknown as CudaDeviceInfo;

  it("reads the row with 16-byte loads and assembles with ptxas for sm_80 and sm_90", async () => {
    const text = lowerPtx(greedyNext, cudaCaps(info), { arch: "sm_90" }).text!;
    expect(text.split("\n").filter((l) => /ld\.global\.v4\.(f32|b32)/.test(l)).length).toBeGreaterThanOrEqual(4);
    for (const arch of ["sm_80", "sm_90"]) {
      const code = lowerPtx(greedyNext, cudaCaps(info), { arch });
      const res = await validatePtx(code.text!, { arch });
      if (res.status === "unavailable") {
        console.log(`ptxas check skipped: ${res.reason}`);
        return;
      }
      expect(res.status === "ok" ? "ok" : res.message).toBe("ok");
    }
  });
});

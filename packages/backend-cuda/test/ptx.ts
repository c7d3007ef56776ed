// What the PTX tests of this package share: the H200's launch limits as a CudaDeviceInfo (enough for cudaCaps) and
// the ptxas check of a kernel for sm_80 and sm_90.
import { lowerPtx, validatePtx } from "@poot/codegen";
import type { Kernel } from "@poot/kernel-dsl";
import { expect } from "vitest";
import { cudaCaps, type CudaDeviceInfo } from "../src/device.js";

/** The H200's compute capability and launch limits; the rest of a CudaDeviceInfo is not read by cudaCaps. */
export const H200_LIMITS = {
  computeCapability: [9, 0],
  maxThreadsPerBlock: 1024,
  warpSize: 32,
  sharedBytesPerBlock: 49152,
} as unknown as CudaDeviceInfo;

/**
 * Lowers `kernel` to PTX for sm_80 and sm_90 on `info`'s caps, hands each text to `check` (if given), and expects
 * ptxas to accept it; where ptxas is missing it says so and stops (the validator is optional outside CI).
 */
export async function expectPtxasAccepts(
  kernel: Kernel,
  info: CudaDeviceInfo = H200_LIMITS,
  check?: (ptx: string) => void,
): Promise<void> {
  for (const arch of ["sm_80", "sm_90"]) {
    const text = lowerPtx(kernel, cudaCaps(info), { arch }).text!;
    check?.(text);
    const r = await validatePtx(text, { arch });
    if (r.status === "unavailable") {
      console.log(`ptxas check skipped: ${r.reason}`);
      return;
    }
    expect(r.status === "ok" ? "ok" : r.message).toBe("ok");
  }
}

// The graph-plan caps of a CUDA device: accepted by graph-plan's own target validation, limited to the static
// shared memory codegen's PTX can declare, and offering no matrix shapes (the kernel DSL has none).
import { makeTarget } from "@poot/graph-plan";
import { describe, expect, it } from "vitest";
import type { CudaContext } from "../context.js";
import type { CudaDeviceInfo } from "../device.js";
import { planCapsOf } from "./plan-caps.js";

const H200 = {
  name: "NVIDIA H200",
  ordinal: 0,
  computeCapability: [9, 0],
  arch: "sm_90",
  driverVersion: 13000,
  multiprocessors: 132,
  totalMemoryBytes: 150109880320,
  maxThreadsPerBlock: 1024,
  sharedBytesPerBlock: 49152,
  sharedBytesOptin: 232448,
  warpSize: 32,
  memoryBusWidthBits: 6016,
  memoryClockKHz: 3201000,
} satisfies CudaDeviceInfo;
const ctxOf = (info: CudaDeviceInfo): CudaContext => ({ device: { info } }) as unknown as CudaContext;

describe("planCapsOf", () => {
  it("passes graph-plan's target validation with the device's limits", () => {
    const caps = planCapsOf(ctxOf(H200));
    expect(() => makeTarget({ kind: "cuda", caps })).not.toThrow();
    expect([caps.sharedBytes, caps.subgroupSize, caps.computeUnits]).toEqual([49152, 32, 132]);
    // Tensor cores (mma.sync m16n8k16) from sm_80; none before.
    expect(caps.matrixShapes.map((s) => `${s.m}x${s.n}x${s.k} ${s.input}`)).toEqual(["16x8x16 bf16", "16x8x16 f16"]);
    const turing = planCapsOf(ctxOf({ ...H200, computeCapability: [7, 5] }));
    expect([turing.dtypes.bf16, turing.matrixShapes.length]).toEqual([false, 0]);
  });
});

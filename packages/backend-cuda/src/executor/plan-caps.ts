// What graph-plan may assume of a CUDA device, read from the device's attributes.

import type { DeviceCaps as PlanCaps } from "@poot/graph-plan";
import type { CudaContext } from "../context.js";
import { cudaMatrixShapes } from "../device.js";

/** The graph-plan caps of a CUDA device: static shared memory only (codegen declares `.shared` arrays). */
export function planCapsOf(ctx: CudaContext): PlanCaps {
  const i = ctx.device.info;
  return {
    maxWorkgroupSize: i.maxThreadsPerBlock,
    maxWorkgroupDims: [1024, 1024, 64],
    maxGrid: [2 ** 31 - 1, 65535, 65535],
    sharedBytes: i.sharedBytesPerBlock,
    subgroupSize: i.warpSize,
    maxStorageBuffers: 512,
    maxBindingBytes: Math.min(i.totalMemoryBytes, 2 ** 48),
    bindingAlignment: 16,
    dtypes: { f16: true, bf16: i.computeCapability[0] >= 8 },
    // sm_80+: PTX mma.sync m16n8k16 for bf16 and f16 (kernelgen's tensor-core GEMM, decisions 0452 and 0805).
    matrixShapes: cudaMatrixShapes(i),
    computeUnits: i.multiprocessors,
  };
}

// What graph-plan may assume of a CUDA device, read from the device's attributes.

import type { DeviceCaps as PlanCaps } from "@poot/graph-plan";
import { synthCapsFrom, type SynthCaps } from "@poot/kernelgen";
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

/**
 * kernelgen's caps for plans on a CUDA device: buffers are raw device pointers (bf16/f16 GEMVs read 16-byte words),
 * and a plan may launch a second kernel over a program-owned transient (flash-decode attention split over the KV
 * length, decision 0804; block GEMVs split into a GEMV and a per-block epilogue, decision 0807).
 */
export function synthCapsOf(caps: PlanCaps): SynthCaps {
  return { ...synthCapsFrom(caps), vectorLoads: true, splitAttention: true, splitBlockGemv: true };
}

// What an opened WebGPU device can do, as plain data (CONVENTIONS 4), and its translations into the caps
// records codegen (lowering), kernelgen (sizing) and graph-plan (planning) read.

// Kept in the emitted .d.ts (preserve): its GPU* types are @webgpu/types' globals, a dependency of this package.
/// <reference types="@webgpu/types" preserve="true" />

import type { DeviceCaps as CodegenCaps } from "@poot/codegen";
import type { DeviceCaps as PlanCaps } from "@poot/graph-plan";
import { synthCapsFrom, type SynthCaps } from "@poot/kernelgen";

/** The measured capabilities of one WebGPU device (what was granted, not what the adapter could offer). */
export interface WgpuCaps {
  /** Adapter in words (vendor, architecture, device, description). */
  readonly adapter: string;
  /** `shader-f16` granted: WGSL `enable f16` and native 16-bit storage. */
  readonly f16: boolean;
  /** `subgroups` granted. */
  readonly subgroups: boolean;
  /** The adapter's subgroup size range [min, max] when reported (equal bounds: a fixed size). */
  readonly subgroupSizes: readonly [number, number] | null;
  /** `timestamp-query` granted: per-dispatch timing is available. */
  readonly timestamps: boolean;
  /** Most invocations in one workgroup. */
  readonly maxWorkgroup: number;
  /** Per-axis workgroup size limits. */
  readonly maxWorkgroupDims: readonly [number, number, number];
  /** Most workgroups along one grid axis. */
  readonly maxWorkgroupsPerDimension: number;
  /** Workgroup (shared) memory in bytes. */
  readonly sharedBytes: number;
  /** Storage buffers one shader stage may bind. */
  readonly maxStorageBuffers: number;
  /** Largest byte range of one storage binding. */
  readonly maxBindingBytes: number;
  /** Largest buffer. */
  readonly maxBufferBytes: number;
  /** Required alignment of a storage binding's byte offset. */
  readonly bindingAlignment: number;
  /** Every feature granted, sorted. */
  readonly features: readonly string[];
}

/** Reads the caps of a device opened from `adapter` (features and limits as granted on the device). */
export function capsOf(adapter: GPUAdapter, device: GPUDevice): WgpuCaps {
  const l = device.limits;
  const info = adapter.info as GPUAdapterInfo & { subgroupMinSize?: number; subgroupMaxSize?: number };
  const has = (f: string): boolean => device.features.has(f);
  const sizes =
    info.subgroupMinSize !== undefined && info.subgroupMaxSize !== undefined && info.subgroupMinSize > 0
      ? ([info.subgroupMinSize, info.subgroupMaxSize] as const)
      : null;
  return {
    adapter: [info.vendor, info.architecture, info.device, info.description]
      .filter((s) => s !== undefined && s !== "")
      .join(" "),
    f16: has("shader-f16"),
    subgroups: has("subgroups"),
    subgroupSizes: sizes,
    timestamps: has("timestamp-query"),
    maxWorkgroup: l.maxComputeInvocationsPerWorkgroup,
    maxWorkgroupDims: [l.maxComputeWorkgroupSizeX, l.maxComputeWorkgroupSizeY, l.maxComputeWorkgroupSizeZ],
    maxWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
    sharedBytes: l.maxComputeWorkgroupStorageSize,
    maxStorageBuffers: l.maxStorageBuffersPerShaderStage,
    maxBindingBytes: l.maxStorageBufferBindingSize,
    maxBufferBytes: l.maxBufferSize,
    bindingAlignment: l.minStorageBufferOffsetAlignment,
    features: [...device.features].map(String).sort(),
  };
}

/**
 * The subgroup size kernels may be generated for: only a fixed size (equal bounds) is safe, since WGSL
 * cannot pin a pipeline's subgroup size; null when subgroups are off or the size varies.
 */
export function fixedSubgroupSize(caps: WgpuCaps): number | null {
  if (!caps.subgroups || caps.subgroupSizes === null) return null;
  const [lo, hi] = caps.subgroupSizes;
  return lo === hi ? lo : null;
}

/** The caps codegen's WGSL lowering reads. */
export function codegenCaps(caps: WgpuCaps): CodegenCaps {
  return {
    maxWorkgroup: caps.maxWorkgroup,
    subgroupSize: fixedSubgroupSize(caps) ?? undefined,
    sharedBytes: caps.sharedBytes,
    // WGSL storage is 32-bit except f16 under `enable f16`; narrower types go through words.
    dtypes: caps.f16 ? ["f32", "u32", "i32", "f16"] : ["f32", "u32", "i32"],
    maxStorageBuffers: caps.maxStorageBuffers,
    f16: caps.f16,
    // WGSL has no bf16 type: bf16 is always unpacked from u32 words.
    bf16: false,
  };
}

/**
 * The caps kernelgen's synthesizers size kernels from: kernelgen's own translation of the planning caps, as the
 * executor's lowering ({@link planCaps}, then `synthCapsFrom`) sizes them.
 */
export function synthCaps(caps: WgpuCaps): SynthCaps {
  return synthCapsFrom(planCaps(caps));
}

/** The caps graph-plan plans a `wgpu` target with (`makeTarget({ kind: "wgpu", caps: planCaps(c) })`). */
export function planCaps(caps: WgpuCaps, computeUnits = 32): PlanCaps {
  const g = caps.maxWorkgroupsPerDimension;
  return {
    maxWorkgroupSize: caps.maxWorkgroup,
    maxWorkgroupDims: caps.maxWorkgroupDims,
    maxGrid: [g, g, g],
    sharedBytes: caps.sharedBytes,
    // graph-plan wants a power-of-two width even without subgroups: one lane reduces alone.
    subgroupSize: fixedSubgroupSize(caps) ?? 1,
    maxStorageBuffers: caps.maxStorageBuffers,
    maxBindingBytes: caps.maxBindingBytes,
    bindingAlignment: caps.bindingAlignment,
    dtypes: { f16: caps.f16, bf16: false },
    matrixShapes: [],
    // WebGPU does not report compute units; the caller may know better (the default is graph-plan's wgpu default).
    computeUnits,
  };
}

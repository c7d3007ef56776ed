// The Vulkan executor (backend kind "vulkan"): @poot/executor's generic staged program over a VulkanComputeDevice.
// Graphs are lowered (through the lowering cache when given one) for the device's measured caps; weights upload
// lazily, once per executor, to device-local memory.

import { DeviceExecutor, type DeviceProgram } from "@poot/executor";
import { lowerWith, type LoweringCache } from "@poot/executor/lowering";
import type { CompileOptions } from "@poot/graph-plan";
import type { VulkanBuffer } from "../buffer.js";
import { VulkanDevice, type DeviceOptions } from "../device.js";
import type { BoundKernel, VulkanKernel } from "../kernel.js";
import type { Recording } from "../recording.js";
import { VulkanComputeDevice } from "./device.js";

/** Options of {@link createVulkanExecutor}. */
export interface VulkanExecutorOptions extends DeviceOptions {
  /** Run on this device (not disposed with the executor) instead of opening one. */
  readonly device?: VulkanDevice;
  /** Compile options for every staged graph (mode, fusion, imported kernels). */
  readonly compile?: CompileOptions;
  /** Record per-dispatch timestamps (read them with `VulkanComputeDevice.timings`). Default false. */
  readonly timestamps?: boolean;
  /** Workgroups resident at once, for the planner's split decisions (default: host cores for CPU devices, else 64). */
  readonly computeUnits?: number;
  /** Lowered programs are read from and written to this cache; so is the pipeline cache of a device opened here. */
  readonly cache?: LoweringCache;
}

/** The Vulkan executor: the generic staged program on a Vulkan device. */
export type VulkanExecutor = DeviceExecutor<VulkanBuffer, VulkanKernel, BoundKernel, Recording> & {
  readonly device: VulkanComputeDevice;
};

/** A program staged on Vulkan. */
export type VulkanProgram = DeviceProgram<VulkanBuffer, VulkanKernel, BoundKernel, Recording>;

/**
 * Creates a Vulkan executor: opens a device (validation, device choice and requirements from `options`) or
 * uses `options.device`. Throws VulkanError `no-device` / `loader-missing` when Vulkan is unavailable.
 */
export function createVulkanExecutor(options: VulkanExecutorOptions = {}): VulkanExecutor {
  const vk =
    options.device ??
    VulkanDevice.open(
      options.cache !== undefined && options.codeCache === undefined
        ? { ...options, codeCache: options.cache }
        : options,
    );
  const device = new VulkanComputeDevice(vk, {
    owns: options.device === undefined,
    ...(options.timestamps !== undefined ? { timestamps: options.timestamps } : {}),
    ...(options.compile !== undefined ? { compile: options.compile } : {}),
    ...(options.computeUnits !== undefined ? { computeUnits: options.computeUnits } : {}),
  });
  return new DeviceExecutor(device, lowerWith(device.caps.lowering, options.cache)) as VulkanExecutor;
}

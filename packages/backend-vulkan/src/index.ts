/**
 * @poot/backend-vulkan: the poot Vulkan backend. libvulkan through koffi (no compiler needed), one compute
 * queue, device-local buffers with staging uploads, SPIR-V pipelines from @poot/codegen cached by hash,
 * a step recorded once in a command buffer and resubmitted per token, timestamp queries, and the
 * Khronos validation layer with a messenger that turns its errors into typed errors.
 * @packageDocumentation
 */

// ── errors ──
export { VulkanError } from "./errors.js";
export type { VulkanErrorCode, VulkanErrorContext } from "./errors.js";

// ── bindings ──
export { loadVulkan } from "./vk/api.js";
export type { VkFunction, VkLib } from "./vk/api.js";

// ── instance and device ──
export { VulkanInstance, VALIDATION_LAYER, instanceLayers } from "./instance.js";
export type { InstanceOptions, ValidationMessage } from "./instance.js";
export { chooseDevice, describePhysicalDevice, unmetRequirement } from "./physical.js";
export type { DeviceRequirements, PhysicalDeviceInfo } from "./physical.js";
export { VulkanDevice } from "./device.js";
export type { DeviceOptions } from "./device.js";
export { probeVulkan } from "./probe.js";
export type { VulkanProbe } from "./probe.js";

// ── buffers, pipelines, kernels ──
export { VulkanBuffer } from "./buffer.js";
export type { BufferKind } from "./buffer.js";
export { PipelineCache } from "./pipeline.js";
export type { ComputePipeline, DescriptorKind, PipelineLayout } from "./pipeline.js";
export { BoundKernel, UniformArena, VulkanKernel } from "./kernel.js";
export type { BufferRange, KernelSignature } from "./kernel.js";

// ── recorded steps ──
export { Recording } from "./recording.js";
export type { CopyStep, DispatchStep, RecordOptions, Step, StepTiming } from "./recording.js";
export { launchKernel } from "./launch.js";
export type { LaunchOptions } from "./launch.js";

// ── the executor contract ──
export { createVulkanExecutor } from "./executor/executor.js";
export type { VulkanExecutor, VulkanExecutorOptions, VulkanProgram } from "./executor/executor.js";
export { VulkanComputeDevice, vulkanLowering, vulkanTarget } from "./executor/device.js";
export type { VulkanComputeOptions } from "./executor/device.js";

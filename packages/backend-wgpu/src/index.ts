/**
 * @poot/backend-wgpu: poot's WebGPU backend. Opens a device on any `navigator.gpu`-shaped `GPU` (Dawn in
 * Node through `@poot/backend-wgpu/node`, the browser's own), reports its caps as data, holds buffers by
 * role, caches pipelines by kernel hash, binds lowered kernels once and replays steps with only slot
 * bytes changing; per-dispatch timestamps and typed errors for device loss, validation and out-of-memory.
 * @packageDocumentation
 */
export { WgpuError } from "./errors.js";
export type { WgpuErrorCode, WgpuErrorContext } from "./errors.js";
export { capsOf, codegenCaps, fixedSubgroupSize, planCaps, synthCaps } from "./caps.js";
export type { WgpuCaps } from "./caps.js";
export { WgpuDevice, requestWgpuDevice, toWgpuError } from "./device.js";
export type { FeatureWish, WgpuDeviceOptions } from "./device.js";
export { BufferArena, BufferUsage, WgpuBuffer, pad4 } from "./buffers.js";
export type { BufferRole } from "./buffers.js";
export { PipelineCache, kernelHash, layoutEntries } from "./pipelines.js";
export type { CachedPipeline } from "./pipelines.js";
export { bindKernel } from "./bind.js";
export type { BindRequest, BoundKernel, KernelArg, KernelShape, PackCopy } from "./bind.js";
export { Step } from "./step.js";
export type { DispatchTiming, StepOptions } from "./step.js";
export { WgpuContext, openWgpu } from "./context.js";
export type { WgpuStats } from "./context.js";
export { runtimeNonFinite } from "./wgsl-fixups.js";

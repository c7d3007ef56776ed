/**
 * @poot/backend-wgpu/executor: WebGPU as a Device of `@poot/executor`'s generic staged program (decision 1601):
 * the proxy device, its device-side operations, and the executor for threads that may not block.
 * For the synchronous contract in Node, see `createSyncWgpuExecutor` in `@poot/backend-wgpu/node`.
 * @packageDocumentation
 */
export { createWgpuExecutor, proxyExecutor } from "./executor.js";
export type { WgpuExecutor, WgpuExecutorOptions } from "./executor.js";
export { WgpuProxyDevice, wgpuDeviceCaps, wgpuLowering } from "./device.js";
export type { WgpuHandle } from "./device.js";
export { WgpuOps, kernelShapeOf } from "./ops.js";
export type { DeviceRequest, Transport, WireOp } from "./protocol.js";

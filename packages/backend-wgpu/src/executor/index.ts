/**
 * @poot/backend-wgpu/executor: the WebGPU executor (async twin of `@poot/executor`'s contract): graphs compiled
 * by graph-plan, kernels from kernelgen lowered by codegen, run on a {@link WgpuContext}. For the synchronous
 * contract in Node, see `createSyncWgpuExecutor` in `@poot/backend-wgpu/node`.
 * @packageDocumentation
 */
export { WgpuExecutor, createWgpuExecutor } from "./executor.js";
export type { WgpuExecutorOptions } from "./executor.js";
export { WgpuProgram } from "./program.js";
export { WgpuStateSet } from "./state.js";
export { lowerForWgpu } from "./lower.js";

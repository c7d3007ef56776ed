// The platform-neutral public API of @poot/backend-cpu, shared by the node entry (index.ts) and the browser entry
// (browser.ts); each entry adds its own `createCpuExecutor` over its platform's threads.

export { CpuExecutor, CpuProgram } from "./executor.js";
export type { CpuExecutorOptions, CpuPhaseProfile, CpuStats } from "./executor.js";
export { CpuDevice, WASM_CODEGEN_CAPS, cpuPlanCaps } from "./device.js";
export type { CpuBuffer, CpuDeviceOptions, CpuKernel, CpuLaunch } from "./device.js";
export type { Schedule } from "./schedule.js";
export type { PoolKernel, PoolProfile, RegionDebug, ThreadPool } from "./pool.js";
export type { KernelFn } from "./thread/core.js";
export { CpuError } from "./errors.js";
export type { CpuErrorCode, CpuErrorContext } from "./errors.js";
export type { CpuCounters, CpuMemory, SharedMemory } from "./memory.js";
export type { CpuPlatform, FileMapper, ThreadHandle, ThreadInit, ThreadTransport } from "./transport.js";
export type { CpuNumerics, NativeLibrary, NativeLoader } from "./native/library.js";
export type { NativeRef } from "./thread/native.js";

/**
 * @poot/backend-cpu: the CPU backend. codegen's Wasm SIMD kernels run on worker_threads over one shared
 * WebAssembly.Memory; a step is one fused region whose phases the threads claim in chunks (decision 0950).
 * @packageDocumentation
 */
export { CpuExecutor, cpuPlanCaps, createCpuExecutor } from "./executor.js";
export type { CpuExecutorOptions, CpuStats } from "./executor.js";
export { CpuProgram } from "./program.js";
export { CpuStateSet } from "./state.js";
export { CpuError } from "./errors.js";
export type { CpuErrorCode, CpuErrorContext } from "./errors.js";
export type { CpuCounters } from "./memory.js";
export { WASM_CODEGEN_CAPS } from "./kernels.js";

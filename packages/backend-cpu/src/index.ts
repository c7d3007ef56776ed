/**
 * @poot/backend-cpu: the CPU backend. codegen's Wasm SIMD kernels run on worker_threads over one shared
 * WebAssembly.Memory; a step is one fused region whose phases the threads claim in chunks (decision 0950). On
 * linux-x64 prebuilt native GEMVs (koffi, no compiler needed) serve the contractions they can (decision 0952).
 * Browsers: `@poot/backend-cpu/browser` (the same executor on Web Workers, decision 0703).
 * @packageDocumentation
 */
export * from "./api.js";
export { cpuLoweringTarget, createCpuExecutor, fastNumericsAvailable, nodePlatform, nodeThreads } from "./node.js";

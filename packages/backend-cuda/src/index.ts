/**
 * The poot CUDA backend: the CUDA driver API through koffi (device, primary context, PTX modules with an
 * on-disk JIT cache, a memory pool, streams, events, launches and CUDA graph capture with slot copies).
 * @packageDocumentation
 */
export { CudaError, invariant } from "./errors.js";
export type { CudaErrorCode, CudaErrorContext } from "./errors.js";
export { loadDriver, DEFAULT_CUDA_LIBRARY, PROTOTYPES } from "./ffi.js";
export type { DriverApi, DriverFn, Handle } from "./ffi.js";
export { openCudaDevice, cudaCaps, cudaMatrixShapes } from "./device.js";
export type { CudaDevice, CudaDeviceInfo, OpenCudaOptions } from "./device.js";
export { MemoryPool, DeviceBuffer, PinnedBuffer, blockSize } from "./memory.js";
export type { PoolStats } from "./memory.js";
export { CudaStream, CudaEvent } from "./stream.js";
export { CudaModule, loadPtx, ptxCacheKey } from "./module.js";
export type { CudaFunction, LoadedModule, LoadPtxOptions } from "./module.js";
export { LaunchParams, launchKernel } from "./launch.js";
export type { KernelArg, Dim3 } from "./launch.js";
export { CudaGraph } from "./graph.js";
export { createCudaContext, kernelArgs, ptxArch } from "./context.js";
export type { CudaContext, CudaContextOptions, CompiledKernel, KernelBindings, KernelSignature } from "./context.js";
export { createCudaExecutor, cudaContextOf, CudaExecutor } from "./executor/executor.js";
export type { CudaExecutorOptions, CudaProgram } from "./executor/executor.js";
export { cudaGreedyLoop, CudaGreedyLoop } from "./executor/greedy-loop.js";
export type { CudaLoopProgram } from "./executor/greedy-loop.js";
export { greedyArgmax, greedyNext, GREEDY_WG } from "@poot/kernelgen";
export { CudaComputeDevice, cudaLowering } from "./executor/device.js";
export type { CudaBuffer, CudaLaunch, CudaRecording } from "./executor/device.js";
export { planCapsOf, synthCapsOf } from "./executor/plan-caps.js";
export { measureCopyBandwidth } from "./bandwidth.js";
export type { CopyBandwidth, CopyBandwidthOptions } from "./bandwidth.js";
export { DEFAULT_NCCL_LIBRARY, loadNccl, NCCL_DTYPES, NCCL_PROTOTYPES, NcclGroup } from "./nccl.js";
export type { NcclApi, RankBuffers } from "./nccl.js";

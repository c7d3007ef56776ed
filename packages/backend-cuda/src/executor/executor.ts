// The CUDA executor: @poot/executor's generic staged program over a CudaComputeDevice. Weights are uploaded lazily,
// once per executor, and shared by every staged program; steps run on one stream or replay as CUDA graphs.

import { DeviceExecutor, type DeviceProgram, type Executor } from "@poot/executor";
import { lowerProgram, type LoweringCache } from "@poot/executor/lowering";
import type { CompileOptions } from "@poot/graph-plan";
import { createCudaContext, type CompiledKernel, type CudaContext, type CudaContextOptions } from "../context.js";
import { CudaComputeDevice, type CudaBuffer, type CudaLaunch, type CudaRecording } from "./device.js";

/** Options of {@link createCudaExecutor}. */
export interface CudaExecutorOptions extends CudaContextOptions {
  /** graph-plan options every staged graph is compiled with (over the device's fusion policy, `cudaLowering`). */
  readonly compile?: CompileOptions;
  /** Lowered programs are read from and written to this cache. */
  readonly cache?: LoweringCache;
}

/** The CUDA executor: the generic staged program on a CUDA device. */
export type CudaExecutor = DeviceExecutor<CudaBuffer, CompiledKernel, CudaLaunch, CudaRecording> & {
  readonly device: CudaComputeDevice;
};

/** A program staged on CUDA. */
export type CudaProgram = DeviceProgram<CudaBuffer, CompiledKernel, CudaLaunch, CudaRecording>;

/** Opens the GPU and returns its executor; disposing the executor releases the device. Throws CudaError("no-driver") without one. */
export function createCudaExecutor(options: CudaExecutorOptions = {}): CudaExecutor {
  const device = new CudaComputeDevice(createCudaContext(options), options.compile);
  const target = device.caps.lowering;
  const cache = options.cache;
  return new DeviceExecutor(device, (input, name) =>
    cache !== undefined ? cache.lower(input, target, name) : lowerProgram(input, target, { name }),
  ) as CudaExecutor;
}

/** The CUDA context of an executor made by {@link createCudaExecutor}, or null for any other executor. */
export function cudaContextOf(executor: Executor): CudaContext | null {
  return executor instanceof DeviceExecutor && executor.device instanceof CudaComputeDevice
    ? executor.device.ctx
    : null;
}

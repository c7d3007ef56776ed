// The CUDA executor: @poot/executor's generic staged program over a CudaComputeDevice. Weights are uploaded lazily,
// once per executor, and shared by every staged program; steps run on one stream or replay as CUDA graphs.

import {
  DeviceExecutor,
  DeviceProgram,
  ExecutorError,
  type Executor,
  type GreedyLoopOptions,
  type StagedProgram,
  type StateSet,
} from "@poot/executor";
import { lowerWith, type LoweringCache } from "@poot/executor/lowering";
import type { CompileOptions } from "@poot/graph-plan";
import { createCudaContext, type CompiledKernel, type CudaContext, type CudaContextOptions } from "../context.js";
import { CudaComputeDevice, type CudaBuffer, type CudaLaunch, type CudaRecording } from "./device.js";
import { cudaGreedyLoop, type CudaGreedyLoop } from "./greedy-loop.js";

/** Options of {@link createCudaExecutor}. */
export interface CudaExecutorOptions extends CudaContextOptions {
  /** graph-plan options every staged graph is compiled with (over the device's fusion policy, `cudaLowering`). */
  readonly compile?: CompileOptions;
  /** Lowered programs are read from and written to this cache. */
  readonly cache?: LoweringCache;
}

/**
 * The CUDA executor: the generic staged program on a CUDA device, with greedy decoding on the device (decision
 * 2201) and counters of graph launches and host waits.
 */
export class CudaExecutor extends DeviceExecutor<CudaBuffer, CompiledKernel, CudaLaunch, CudaRecording> {
  declare readonly device: CudaComputeDevice;

  /** CUDA graph launches submitted so far (replayed steps, greedy-loop launches). */
  graphLaunchesSubmitted(): number {
    return this.device.graphLaunches;
  }

  /** Milliseconds the host has spent blocked on the device so far. */
  hostWaitMs(): number {
    return this.device.waitMs;
  }

  /**
   * The device greedy loop of a single-token paged decode program staged here (decision 2201), or null when the
   * program's slots or logits do not fit it.
   */
  greedyLoop(program: StagedProgram, state: StateSet, options: GreedyLoopOptions): CudaGreedyLoop | null {
    this.alive();
    if (!(program instanceof DeviceProgram))
      throw new ExecutorError("unsupported-program", "greedyLoop: the program was not staged by this executor", {
        program: program.name,
      });
    return cudaGreedyLoop(this.device, program as CudaProgram, state, options, (n) => this.noteDispatches(n));
  }
}

/** A program staged on CUDA. */
export type CudaProgram = DeviceProgram<CudaBuffer, CompiledKernel, CudaLaunch, CudaRecording>;

/** Opens the GPU and returns its executor; disposing the executor releases the device. Throws CudaError("no-driver") without one. */
export function createCudaExecutor(options: CudaExecutorOptions = {}): CudaExecutor {
  const device = new CudaComputeDevice(createCudaContext(options), options.compile);
  return new CudaExecutor(device, lowerWith(device.caps.lowering, options.cache));
}

/** The CUDA context of an executor made by {@link createCudaExecutor}, or null for any other executor. */
export function cudaContextOf(executor: Executor): CudaContext | null {
  return executor instanceof DeviceExecutor && executor.device instanceof CudaComputeDevice
    ? executor.device.ctx
    : null;
}

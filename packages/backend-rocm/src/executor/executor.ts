// The ROCm executor: @poot/executor's generic staged program over a RocmDevice. Weights are uploaded lazily, once
// per executor, and shared by every staged program; steps run on one stream or replay as HIP graphs.

import { DeviceExecutor, type DeviceProgram, type Executor } from "@poot/executor";
import { lowerWith, type LoweringCache } from "@poot/executor/lowering";
import type { CompileOptions } from "@poot/graph-plan";
import { baseArch } from "../hip/arch.js";
import { HipRuntime, type HipRuntimeOptions } from "../hip/runtime.js";
import { RocmDevice, type RocmBuffer, type RocmKernel, type RocmLaunch, type RocmRecording } from "./device.js";
import { CodeObjectBuilder, type ToolchainOptions } from "./program.js";

/** Options of {@link createRocmExecutor}. */
export interface RocmExecutorOptions extends HipRuntimeOptions {
  /** graph-plan options every staged graph is compiled with (over the ROCm fusion policy). */
  readonly compile?: CompileOptions;
  /** Lowered programs are read from and written to this cache. */
  readonly cache?: LoweringCache;
  /** Where llc and ld.lld are found (default: `<rocmPath>/llvm/bin`, `/opt/rocm/llvm/bin`, then LLVM 19 on PATH). */
  readonly toolchain?: Omit<ToolchainOptions, "rocmPath">;
}

/** The ROCm executor: the generic staged program on an AMD GPU. */
export type RocmExecutor = DeviceExecutor<RocmBuffer, RocmKernel, RocmLaunch, RocmRecording> & {
  readonly device: RocmDevice;
};

/** A program staged on ROCm. */
export type RocmProgram = DeviceProgram<RocmBuffer, RocmKernel, RocmLaunch, RocmRecording>;

/**
 * Opens the GPU and returns its executor; disposing the executor releases the device. Throws RocmError `no_runtime`
 * (no libamdhip64), `no_device`, or `no_code_object` (a GPU the backend plans nothing for).
 */
export function createRocmExecutor(options: RocmExecutorOptions = {}): RocmExecutor {
  const hip = HipRuntime.open(options);
  const builder = new CodeObjectBuilder({
    ...(options.rocmPath !== undefined ? { rocmPath: options.rocmPath } : {}),
    ...options.toolchain,
  });
  const device = new RocmDevice(hip, builder, options.compile);
  const lower = lowerWith(device.caps.lowering, options.cache);
  return new DeviceExecutor(device, (input, name) => {
    const p = lower(input, name);
    // One llc + ld.lld run for the program's kernels (the device loads each from the shared code object).
    builder.prebuild(
      p.kernels.flatMap((k) => (k.code.text === undefined ? [] : [k.code.text])),
      baseArch(hip.gcnArchName),
    );
    return p;
  }) as RocmExecutor;
}

/** Whether `executor` was made by {@link createRocmExecutor}. */
export function isRocmExecutor(executor: Executor): executor is RocmExecutor {
  return executor instanceof DeviceExecutor && executor.device instanceof RocmDevice;
}

// The node entry's factory: the CPU executor on worker_threads.

import type { LoweringTarget } from "@poot/executor/lowering";
import { cpuLowering, fastCheck } from "./device.js";
import { CpuExecutor, type CpuExecutorOptions } from "./executor.js";
import { loadNodeNative } from "./native/node-library.js";
import { nodePlatform } from "./transport-node.js";

export { nodePlatform, nodeThreads } from "./transport-node.js";

/** Creates the CPU executor (backend kind `"cpu"`): `threads` threads (default: the core count) over one shared memory. */
export function createCpuExecutor(options: CpuExecutorOptions = {}): CpuExecutor {
  return new CpuExecutor(options, nodePlatform());
}

/**
 * Whether `numerics: "fast"` runs here (decision 2320): the native kernels ship for this platform with their
 * integer dot-product kernels (AVX-512 VNNI code, or its AVX2 fallback on other x86-64-v3 CPUs: decision 2335).
 */
export function fastNumericsAvailable(): boolean {
  return loadNodeNative()?.fast === true;
}

/**
 * The lowering target that `createCpuExecutor(options)` would lower its programs for (its plan caps with the native
 * library's formats, its kernels), without starting any thread: what `poot compile --target cpu` predicts from.
 * @throws CpuError `unsupported-platform` for `numerics: "fast"` where the native kernels cannot run it.
 */
export function cpuLoweringTarget(
  options: Pick<CpuExecutorOptions, "threads" | "compile" | "native" | "numerics"> = {},
): LoweringTarget {
  const platform = nodePlatform();
  const native = options.native === false ? null : (platform.native?.() ?? null);
  if (options.numerics === "fast") fastCheck(native);
  return cpuLowering(options.threads ?? platform.defaultThreads, native, options.numerics === "fast", options.compile);
}

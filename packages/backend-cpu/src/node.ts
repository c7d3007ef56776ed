// The node entry's factory: the CPU executor on worker_threads.

import { CpuExecutor, type CpuExecutorOptions } from "./executor.js";
import { loadNodeNative } from "./native/node-library.js";
import { nodePlatform } from "./transport-node.js";

export { nodePlatform, nodeThreads } from "./transport-node.js";

/** Creates the CPU executor (backend kind `"cpu"`): `threads` threads (default: the core count) over one shared memory. */
export function createCpuExecutor(options: CpuExecutorOptions = {}): CpuExecutor {
  return new CpuExecutor(options, nodePlatform());
}

/**
 * Whether `numerics: "fast"` runs here (decision 2320): the native kernels ship for
 * this platform and this CPU has AVX-512 VNNI.
 */
export function fastNumericsAvailable(): boolean {
  return loadNodeNative()?.vnni === true;
}

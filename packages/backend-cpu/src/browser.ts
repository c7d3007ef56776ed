/**
 * @poot/backend-cpu/browser: the CPU backend in a browser. The same executor, kernels and thread loop as the node
 * entry, its worker threads Web Workers over a shared WebAssembly.Memory. Call it inside a Worker of a
 * cross-origin-isolated page (COOP same-origin, COEP require-corp); decision 0703.
 * @packageDocumentation
 */
import { CpuExecutor, type CpuExecutorOptions } from "./executor.js";
import { browserPlatform } from "./transport-browser.js";

export * from "./api.js";
export { browserPlatform, browserThreads } from "./transport-browser.js";

/** Creates the CPU executor in a browser Worker: `threads` threads (default `navigator.hardwareConcurrency`) as Web Workers. */
export function createCpuExecutor(options: CpuExecutorOptions = {}): CpuExecutor {
  return new CpuExecutor(options, browserPlatform());
}

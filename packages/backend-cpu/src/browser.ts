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

/**
 * Creates the CPU executor in a browser Worker: `threads` threads (default `navigator.hardwareConcurrency`) as Web
 * Workers. Async: a Web Worker starts only once its creator yields to the event loop.
 */
export async function createCpuExecutor(options: CpuExecutorOptions = {}): Promise<CpuExecutor> {
  const executor = new CpuExecutor(options, browserPlatform());
  try {
    await executor.pool.started();
  } catch (e) {
    executor.dispose();
    throw e;
  }
  return executor;
}

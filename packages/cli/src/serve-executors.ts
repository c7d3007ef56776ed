// The executor module of `poot serve`'s engine worker (built to dist/serve-executors.js): the worker thread
// imports it to make the CLI's executors there, since a function cannot cross into a thread but a module can.
import { createExecutor, loadBackend, loweringCache } from "./commands/backends.js";

/** An executor factory as @poot/serve's ExecutorFactory takes it. */
export type ServeExecutorFactory = (backend: string, command: string) => ReturnType<typeof createExecutor>;

/**
 * Loads the backend packages `backends` need (the GPU ones are optional imports) and returns the CLI's executor
 * factory, with its lowering cache, for the engine worker of `poot serve`.
 */
export async function executorFactory(backends: readonly string[], command: string): Promise<ServeExecutorFactory> {
  for (const name of backends) await loadBackend(name, command);
  const cache = loweringCache((m) => process.stderr.write(`${m}\n`));
  return (name, cmd) => createExecutor(name, cmd, {}, cache);
}

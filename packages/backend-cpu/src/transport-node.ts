// The node platform: worker threads from `node:worker_threads` running dist/worker-node.js (bundled from
// worker-node.ts at build time), the core count and CPU model from `node:os`. Workers never keep the process alive.

import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import * as os from "node:os";
import { fileURLToPath } from "node:url";
import { MessageChannel, Worker, receiveMessageOnPort } from "node:worker_threads";
import { nodeFileMapper } from "./map-node.js";
import { loadNodeNative } from "./native/node-library.js";
import type { CpuPlatform, ThreadHandle, ThreadInit, ThreadTransport } from "./transport.js";

type Esbuild = {
  buildSync(o: object): { outputFiles: { text: string }[] };
};

let fromSources: string | undefined;

/**
 * The worker's script: dist/worker-node.js beside this module once built. Run from the TypeScript sources (tests),
 * the same entry is bundled here with esbuild on first use, so a worker never runs older code than the host.
 */
function workerScript(): { script: URL | string; eval: boolean } {
  const built = new URL("./worker-node.js", import.meta.url);
  if (existsSync(fileURLToPath(built))) return { script: built, eval: false };
  const esbuild = createRequire(import.meta.url)("esbuild") as Esbuild;
  fromSources ??= esbuild.buildSync({
    entryPoints: [fileURLToPath(new URL("./worker-node.ts", import.meta.url))],
    bundle: true,
    format: "cjs",
    platform: "node",
    target: "node20",
    conditions: ["source"],
    write: false,
  }).outputFiles[0]!.text;
  return { script: fromSources, eval: true };
}

/** worker_threads, each with a MessagePort the host reads synchronously. */
export const nodeThreads: ThreadTransport = {
  name: "worker_threads",
  startsWhileBlocked: true,
  start(init: ThreadInit): ThreadHandle {
    const { port1, port2 } = new MessageChannel();
    const { script, eval: isSource } = workerScript();
    const w = new Worker(script, { eval: isSource, workerData: { ...init, port: port2 }, transferList: [port2] });
    w.unref();
    port1.unref();
    return {
      post: (m) => port1.postMessage(m),
      receive: () => receiveMessageOnPort(port1)?.message as string | undefined,
      terminate: () => {
        void w.terminate();
        port1.close();
      },
    };
  },
};

/** The node platform: worker_threads, `os.availableParallelism()` threads by default, the prebuilt native GEMVs, mapped weights. */
export function nodePlatform(): CpuPlatform {
  return {
    transport: nodeThreads,
    defaultThreads: os.availableParallelism(),
    cpu: os.cpus()[0]?.model.trim() ?? "CPU",
    native: loadNodeNative,
    files: nodeFileMapper,
  };
}

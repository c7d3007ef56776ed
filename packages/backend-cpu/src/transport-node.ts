// The node platform: worker threads from `node:worker_threads` started from the thread source (`eval: true`), the
// core count and CPU model from `node:os`. Workers never keep the process alive (dispose() stops them).

import * as os from "node:os";
import { MessageChannel, Worker, receiveMessageOnPort } from "node:worker_threads";
import { loadNodeNative } from "./native/node-library.js";
import type { CpuPlatform, ThreadHandle, ThreadInit, ThreadTransport } from "./transport.js";
import { NODE_WORKER_SOURCE } from "./worker-source.js";

/** worker_threads, each with a MessagePort the host reads synchronously. */
export const nodeThreads: ThreadTransport = {
  name: "worker_threads",
  startsWhileBlocked: true,
  start(init: ThreadInit): ThreadHandle {
    const { port1, port2 } = new MessageChannel();
    const w = new Worker(NODE_WORKER_SOURCE, {
      eval: true,
      workerData: { ...init, port: port2 },
      transferList: [port2],
    });
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

/** The node platform: worker_threads, `os.availableParallelism()` threads by default, the prebuilt native GEMVs. */
export function nodePlatform(): CpuPlatform {
  return {
    transport: nodeThreads,
    defaultThreads: os.availableParallelism(),
    cpu: os.cpus()[0]?.model.trim() ?? "CPU",
    native: loadNodeNative,
  };
}

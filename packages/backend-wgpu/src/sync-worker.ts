// Entry of the synchronous executor's device worker (a separate bundle: `dist/sync-worker.js`). Started by
// `createSyncWgpuExecutor`; a failure to load the executor is reported to the blocked caller (signal word 2).

import { workerData } from "node:worker_threads";
import type { WorkerInit } from "./sync/protocol.js";

const init = workerData as WorkerInit;
import("./sync/worker.js").then(
  (m) => m.serveWorker(init),
  (e: unknown) => {
    init.port.postMessage({
      ok: false,
      error: {
        name: "WgpuError",
        code: "no-webgpu",
        message: `the device worker could not load the executor: ${String(e)}`,
        context: { operation: "worker" },
      },
    });
    const signal = new Int32Array(init.signal);
    Atomics.store(signal, 0, 2);
    Atomics.notify(signal, 0);
  },
);

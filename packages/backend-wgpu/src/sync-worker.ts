// Entry of the synchronous executor's device worker (a separate bundle: `dist/sync-worker.js`).
// Started by `createSyncWgpuExecutor` with the shared signal word and the reply port as workerData.

import { workerData } from "node:worker_threads";
import type { WorkerInit } from "./sync/protocol.js";
import { serveWorker } from "./sync/worker.js";

serveWorker(workerData as WorkerInit);

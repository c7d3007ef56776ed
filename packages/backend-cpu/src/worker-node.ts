// A node worker_threads worker of the CPU pool (bundled to dist/worker-node.js): `workerData` = { memory, ctl,
// thread, port }; load messages arrive on the port, read synchronously when the host commands a load.

import { createRequire } from "node:module";
import { receiveMessageOnPort, workerData, type MessagePort } from "node:worker_threads";
import type { SharedMemory } from "./memory.js";
import { threadMain, type LoadEntry } from "./thread/main.js";
import { nativeKernels } from "./thread/native.js";

const { memory, ctl, thread, port } = workerData as {
  memory: SharedMemory;
  ctl: number;
  thread: number;
  port: MessagePort;
};
const loop = threadMain(
  memory,
  ctl,
  thread,
  () => receiveMessageOnPort(port)?.message as LoadEntry[] | undefined,
  (text) => port.postMessage(text),
  // koffi is required by its absolute path (NativeRef.koffi).
  nativeKernels((path) => createRequire(path)(path)),
);
// The host posts a load before it commands it, so the message is in the port's queue when the loop asks for it; were it
// not yet, the loop returns false and asks again.
while (!loop());
port.close();

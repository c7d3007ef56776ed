// A browser Web Worker of the CPU pool (bundled to dist/worker-browser.js, started as a module worker): the first
// message is { memory, ctl, thread }, later ones are loads, queued until the loop asks for them.

import type { ThreadInit } from "./transport.js";
import { threadMain, type LoadEntry } from "./thread/main.js";

interface WorkerScope {
  onmessage: ((e: { data: unknown }) => void) | null;
  postMessage(m: unknown): void;
  close(): void;
}

const scope = globalThis as unknown as WorkerScope;
const inbox: (readonly LoadEntry[])[] = [];
let loop: (() => boolean) | null = null;
scope.onmessage = (e) => {
  if (loop === null) {
    const init = e.data as ThreadInit;
    loop = threadMain(
      init.memory,
      init.ctl,
      init.thread,
      () => inbox.shift(),
      (text) => scope.postMessage(text),
      () => {
        throw new Error("native kernels do not run in a browser");
      },
    );
  } else inbox.push(e.data as readonly LoadEntry[]);
  if (loop()) scope.close();
};

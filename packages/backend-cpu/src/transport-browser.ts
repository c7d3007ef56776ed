// The browser platform: module Web Workers running worker-browser.js (bundled from worker-browser.ts; a bundler sees
// `new Worker(new URL(...), ...)`), over a shared WebAssembly.Memory. The executor itself must run in a Worker.

import { CpuError } from "./errors.js";
import type { CpuPlatform, ThreadHandle, ThreadInit, ThreadTransport } from "./transport.js";

interface BrowserWorker {
  postMessage(m: unknown): void;
  terminate(): void;
  onmessage: ((e: { data: unknown }) => void) | null;
}

interface BrowserGlobals {
  readonly Worker?: new (url: URL, options: { type: "module" }) => BrowserWorker;
  readonly crossOriginIsolated?: boolean;
  readonly document?: unknown;
  readonly navigator?: { hardwareConcurrency?: number; userAgent?: string };
}

const G = globalThis as unknown as BrowserGlobals;
// The global itself (not `G.Worker`), so that bundlers see `new Worker(new URL(...))` and emit the worker's file.
declare const Worker: new (url: URL, options: { type: "module" }) => BrowserWorker;

/** Web Workers; the first message starts the thread, later ones are loads. Their error text arrives asynchronously. */
export const browserThreads: ThreadTransport = {
  name: "Web Workers",
  startsWhileBlocked: false,
  start(init: ThreadInit): ThreadHandle {
    if (G.Worker === undefined)
      throw new CpuError(
        "unsupported-platform",
        "this context has no Worker constructor: run the executor with threads: 1",
      );
    const w = new Worker(new URL("./worker-browser.js", import.meta.url), { type: "module" });
    const inbox: string[] = [];
    w.onmessage = (e) => void inbox.push(String(e.data));
    w.postMessage(init);
    return { post: (m) => w.postMessage(m), receive: () => inbox.shift(), terminate: () => w.terminate() };
  },
};

/**
 * The browser platform. Throws `unsupported-platform` on a page's main thread (it may not `Atomics.wait` nor compile
 * kernel modules synchronously) and without cross-origin isolation (no shared memory: send COOP/COEP headers).
 */
export function browserPlatform(): CpuPlatform {
  if (G.document !== undefined)
    throw new CpuError(
      "unsupported-platform",
      "the CPU executor runs in a Worker, not on a page's main thread (which may not block or compile modules synchronously)",
    );
  if (G.crossOriginIsolated === false)
    throw new CpuError(
      "unsupported-platform",
      "shared WebAssembly memory needs cross-origin isolation: serve the page with Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp",
    );
  return {
    transport: browserThreads,
    defaultThreads: G.navigator?.hardwareConcurrency ?? 1,
    cpu: G.navigator?.userAgent ?? "browser",
  };
}

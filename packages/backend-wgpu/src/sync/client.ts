// `@poot/executor`'s synchronous Executor on WebGPU in Node: the generic staged program on this thread, its
// WgpuProxyDevice's requests run by a worker thread that owns Dawn; a read blocks on Atomics.wait (decisions 0700, 1601).

import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from "node:worker_threads";
import type { LoweringCache } from "@poot/executor/lowering";
import type { CompileOptions } from "@poot/graph-plan";
import type { WgpuCaps } from "../caps.js";
import { WgpuError } from "../errors.js";
import { WgpuProxyDevice, wgpuDeviceCaps } from "../executor/device.js";
import { proxyExecutor, type WgpuExecutor } from "../executor/executor.js";
import type { Transport } from "../executor/protocol.js";
import type { Message, OpenOptions, Reply, Request, WireError } from "./protocol.js";

/** Options of {@link createSyncWgpuExecutor}. */
export interface SyncWgpuOptions extends Partial<OpenOptions> {
  /** graph-plan options every staged graph is compiled with. */
  readonly executor?: { readonly compile?: CompileOptions };
  /** Lowered programs are read from and written to this cache. */
  readonly cache?: LoweringCache;
  /** The worker script (default: `sync-worker.js` beside this module in the built package). */
  readonly workerUrl?: URL;
  /** Longest wait for one call, in ms (default 10 minutes: first pipeline compiles can be slow). */
  readonly timeoutMs?: number;
}

/** The worker's error as thrown there (its device work throws WgpuErrors). */
function rebuild(e: WireError): Error {
  if (e.name === "WgpuError" && e.code !== undefined)
    return new WgpuError(
      e.code as WgpuError["code"],
      e.message.replace(/^[a-z-]+: /, ""),
      (e.context ?? {}) as WgpuError["context"],
    );
  const err = new Error(e.message);
  err.name = e.name;
  return err;
}

/** The blocking channel to the worker: the transport of the executor's WgpuProxyDevice. */
class Channel implements Transport {
  readonly #signal = new Int32Array(new SharedArrayBuffer(8));
  readonly #port: MessagePort;
  readonly #worker: Worker;
  readonly #timeout: number;
  #failure: Error | undefined;

  constructor(url: URL, timeoutMs: number) {
    const { port1, port2 } = new MessageChannel();
    this.#port = port1;
    this.#timeout = timeoutMs;
    // The worker runs built JavaScript: a dev-time `--conditions source` (vitest) would make it load .ts sources.
    const execArgv = process.execArgv.filter(
      (a, i, all) => !/^(--conditions|-C)(=|$)/.test(a) && !/^(--conditions|-C)$/.test(all[i - 1] ?? ""),
    );
    this.#worker = new Worker(url, {
      workerData: { signal: this.#signal.buffer, port: port2 },
      transferList: [port2],
      execArgv,
    });
    // The worker must not keep the process alive once the executor is dropped.
    this.#worker.unref();
  }

  /** Queues `r` without waiting (the worker runs requests in order; a failure is answered to the next call). */
  post(r: Request): void {
    const m: Message = { r, answer: false };
    if (r.op === "upload") this.#port.postMessage(m, [r.data.buffer as ArrayBuffer]);
    else this.#port.postMessage(m);
  }

  /** Sends `r` and blocks until the worker answers it. */
  call(r: Request): unknown {
    // 1 -> 0 only: a worker that failed to load leaves 2, which every later call reads as its error.
    Atomics.compareExchange(this.#signal, 0, 1, 0);
    this.#port.postMessage({ r, answer: true } satisfies Message);
    if (Atomics.wait(this.#signal, 0, 0, this.#timeout) === "timed-out")
      throw new WgpuError("device-lost", `the device worker did not answer ${r.op} within ${this.#timeout} ms`, {
        operation: r.op,
      });
    if (Atomics.load(this.#signal, 0) === 2) {
      const failed = receiveMessageOnPort(this.#port) as { message: Reply } | undefined;
      this.#failure ??=
        failed !== undefined && !failed.message.ok
          ? rebuild(failed.message.error)
          : new WgpuError("no-webgpu", "the device worker failed to start", { operation: r.op });
      throw this.#failure;
    }
    let m: { message: Reply } | undefined;
    // The reply is posted before the signal is set, but may reach this port's queue a moment later.
    for (let i = 0; (m = receiveMessageOnPort(this.#port) as typeof m) === undefined && i < 1000; i++)
      Atomics.wait(this.#signal, 1, 0, 1);
    if (m === undefined)
      throw new WgpuError("device-lost", `the device worker signalled ${r.op} without a reply`, { operation: r.op });
    if (!m.message.ok) throw rebuild(m.message.error);
    return m.message.value;
  }

  /** A call, as a promise (the contract's async reads work here too). */
  async request(r: Request): Promise<unknown> {
    return this.call(r);
  }

  close(): void {
    this.#port.close();
    void this.#worker.terminate();
  }
}

/** The built worker: beside the bundled module in dist/, or the package's dist/ when running from src/sync/. */
function defaultWorker(): URL {
  const candidates = [
    new URL("./sync-worker.js", import.meta.url),
    new URL("../../dist/sync-worker.js", import.meta.url),
  ];
  const found = candidates.find((u) => existsSync(fileURLToPath(u)));
  if (found === undefined)
    throw new WgpuError(
      "no-webgpu",
      "the device worker (dist/sync-worker.js) is not built: run `pnpm build`, or pass workerUrl",
      { operation: "createSyncWgpuExecutor" },
    );
  return found;
}

/** The synchronous WebGPU executor: the generic staged program over a device in a worker thread. */
export type SyncWgpuExecutor = WgpuExecutor;

/** Opens a WebGPU device in a worker thread and returns a synchronous `Executor` over it (Node only). */
export function createSyncWgpuExecutor(options: SyncWgpuOptions = {}): SyncWgpuExecutor {
  const ch = new Channel(options.workerUrl ?? defaultWorker(), options.timeoutMs ?? 600_000);
  const caps = ch.call({ op: "open", options: { gpu: options.gpu ?? {}, device: options.device ?? {} } }) as WgpuCaps;
  const device = new WgpuProxyDevice(wgpuDeviceCaps(caps, options.executor?.compile), ch);
  return proxyExecutor(device, options.cache);
}

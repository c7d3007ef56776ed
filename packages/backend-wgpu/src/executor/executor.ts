// The WebGPU executor (decision 1601): @poot/executor's generic staged program on a WgpuProxyDevice; on a thread
// that may not block (a page), its requests run on this thread's promise chain and reads are asynchronous.

import { DeviceExecutor } from "@poot/executor";
import { lowerWith, type LoweringCache } from "@poot/executor/lowering";
import type { CompileOptions } from "@poot/graph-plan";
import type { WgpuContext } from "../context.js";
import { WgpuProxyDevice, wgpuDeviceCaps, type WgpuHandle } from "./device.js";
import { WgpuOps } from "./ops.js";
import type { DeviceRequest, Transport } from "./protocol.js";

/** Options of {@link createWgpuExecutor}. */
export interface WgpuExecutorOptions {
  /** graph-plan options every staged graph is compiled with (e.g. `{ fusion: false }` for one kernel per primitive). */
  readonly compile?: CompileOptions;
  /** Lowered programs are read from and written to this cache. */
  readonly cache?: LoweringCache;
}

/** The generic executor over a WebGPU proxy device, lowering through `cache` when given. */
export function proxyExecutor(device: WgpuProxyDevice, cache?: LoweringCache): WgpuExecutor {
  return new DeviceExecutor(device, lowerWith(device.caps.lowering, cache)) as WgpuExecutor;
}

/** Requests run in order on this thread; after a queued request fails, later ones are skipped until one is answered. */
class ChainTransport implements Transport {
  #chain: Promise<unknown> = Promise.resolve();
  #error: unknown = undefined;
  constructor(readonly ops: WgpuOps) {}
  post(r: DeviceRequest): void {
    this.#chain = this.#chain
      .then(() => (this.#error === undefined ? this.ops.handle(r) : null))
      .catch((e: unknown) => void (this.#error ??= e));
  }
  request(r: DeviceRequest): Promise<unknown> {
    const p = this.#chain.then(() => {
      const e = this.#error;
      this.#error = undefined;
      if (e !== undefined) throw e;
      return this.ops.handle(r);
    });
    this.#chain = p.catch(() => undefined);
    return p;
  }
  close(): void {}
}

/** The WebGPU executor: the generic staged program on a {@link WgpuProxyDevice}. */
export type WgpuExecutor = DeviceExecutor<WgpuHandle, WgpuHandle, WgpuHandle, WgpuHandle> & {
  readonly device: WgpuProxyDevice;
};

/**
 * Opens the WebGPU executor on a context (from `openWgpu`) for a thread that may not block: requests run on this
 * thread's promise chain, so outputs and State are read with `readOutputAsync` and `readAsync`, and
 * `executor.device.syncAsync()` waits for queued work and rethrows a queued request's error. Disposing the executor
 * disposes the context.
 */
export function createWgpuExecutor(ctx: WgpuContext, options: WgpuExecutorOptions = {}): WgpuExecutor {
  const device = new WgpuProxyDevice(wgpuDeviceCaps(ctx.caps, options.compile), new ChainTransport(new WgpuOps(ctx)));
  return proxyExecutor(device, options.cache);
}

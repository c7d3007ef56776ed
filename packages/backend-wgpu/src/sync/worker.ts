// The device worker of the synchronous executor: owns Dawn and a WgpuOps, runs requests one at a time in arrival
// order, answers calls (a queued request's failure is the next call's answer) and wakes the caller through Atomics.

import { openWgpu } from "../context.js";
import { WgpuError } from "../errors.js";
import { WgpuOps } from "../executor/ops.js";
import { nodeGpu } from "../node.js";
import type { Message, Reply, WireError, WorkerInit } from "./protocol.js";

function wire(e: unknown): WireError {
  if (e instanceof Error) {
    const x = e as Error & { code?: unknown; context?: unknown };
    return {
      name: e.name,
      message: e.message,
      ...(typeof x.code === "string" ? { code: x.code } : {}),
      ...(typeof x.context === "object" && x.context !== null
        ? { context: { ...(x.context as Record<string, unknown>) } }
        : {}),
    };
  }
  return { name: "Error", message: String(e) };
}

/** Serves requests on `init.port` until `dispose`. */
export function serveWorker(init: WorkerInit): void {
  const signal = new Int32Array(init.signal);
  const port = init.port;
  let ops: WgpuOps | null = null;
  let failed: unknown = undefined;
  // Requests run strictly in order: each waits for the one before it.
  let queue: Promise<void> = Promise.resolve();
  port.on("message", ({ r, answer }: Message) => {
    queue = queue.then(async () => {
      let reply: Reply | null = null;
      try {
        if (r.op === "open") {
          const ctx = await openWgpu(await nodeGpu(r.options.gpu), r.options.device);
          ops = new WgpuOps(ctx);
          reply = { ok: true, value: ctx.caps };
        } else if (ops === null) {
          throw new WgpuError("disposed", "the device worker has no device open", { operation: r.op });
        } else if (failed !== undefined && r.op !== "dispose") {
          // After a failed request, later ones are skipped until a call reports the failure.
          if (answer) {
            const e = failed;
            failed = undefined;
            throw e;
          }
        } else {
          const value = await ops.handle(r);
          reply = { ok: true, value: value ?? null };
        }
      } catch (e) {
        if (answer) reply = { ok: false, error: wire(e) };
        else failed ??= e;
      }
      if (!answer) return;
      port.postMessage(reply ?? { ok: true, value: null });
      Atomics.store(signal, 0, 1);
      Atomics.notify(signal, 0);
      if (r.op === "dispose") port.close();
    });
  });
}

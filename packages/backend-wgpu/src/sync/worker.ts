// The device worker of the synchronous executor: owns Dawn and an async WgpuExecutor, serves requests one
// at a time in arrival order, posts each reply and then wakes the waiting caller through Atomics.

import type { Graph, HostData } from "@poot/graph-ir";
import { ExecutorError } from "@poot/executor";
import { openWgpu } from "../context.js";
import { createWgpuExecutor, type WgpuExecutor } from "../executor/executor.js";
import type { WgpuProgram } from "../executor/program.js";
import type { WgpuStateSet } from "../executor/state.js";
import { nodeGpu } from "../node.js";
import type { Reply, Request, WireError, WorkerInit } from "./protocol.js";

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
  let exec: WgpuExecutor | null = null;
  const weights = new Map<string, HostData>();
  const programs = new Map<number, WgpuProgram>();
  const states = new Map<number, WgpuStateSet>();
  let next = 1;
  const need = (): WgpuExecutor => {
    if (exec === null) throw new ExecutorError("disposed", "the device worker has no executor open", {});
    return exec;
  };
  const program = (pid: number): WgpuProgram => {
    const p = programs.get(pid);
    if (p === undefined) throw new ExecutorError("disposed", "program used after dispose", {});
    return p;
  };
  const state = (sid: number | null): WgpuStateSet | undefined => {
    if (sid === null) return undefined;
    const s = states.get(sid);
    if (s === undefined) throw new ExecutorError("disposed", "StateSet used after dispose", {});
    return s;
  };

  async function handle(r: Request): Promise<unknown> {
    switch (r.op) {
      case "open": {
        const ctx = await openWgpu(await nodeGpu(r.options.gpu), r.options.device);
        exec = createWgpuExecutor(ctx, r.options.executor);
        return exec.caps;
      }
      case "bindWeights":
        weights.clear();
        // The caller sends each weight before the first run that reads it; a missing one is a caller bug.
        need().bindWeights((key) => {
          const d = weights.get(key);
          if (d === undefined)
            throw new ExecutorError("unbound-weights", "weight was not sent to the device worker", { key });
          return d;
        });
        return null;
      case "weights":
        for (const [k, d] of r.entries) weights.set(k, d as HostData);
        return null;
      case "stage": {
        const p = await need().stage(r.graph as Graph, { name: r.name });
        programs.set(next, p);
        return next++;
      }
      case "createState": {
        const s = await program(r.pid).createState();
        states.set(next, s);
        return { sid: next++, lanes: s.lanes };
      }
      case "writeSlot":
        return program(r.pid).writeSlot(r.key, r.data);
      case "run":
        return program(r.pid).run(state(r.sid));
      case "readOutput":
        return program(r.pid).readOutput(r.name);
      case "capture":
        return program(r.pid).capture(state(r.sid));
      case "replay":
        return program(r.pid).replay();
      case "disposeProgram":
        programs.get(r.pid)?.dispose();
        programs.delete(r.pid);
        return null;
      case "stateRead":
        return state(r.sid)!.read(r.key);
      case "stateWrite":
        return state(r.sid)!.write(r.key, r.data);
      case "copyLanes":
        return state(r.sid)!.copyLanes(state(r.from)!, r.fromLane, r.toLane, r.count);
      case "zero":
        return state(r.sid)!.zero();
      case "disposeState":
        states.get(r.sid)?.dispose();
        states.delete(r.sid);
        return null;
      case "deviceBytes":
        return need().deviceBytes();
      case "dispatchesSubmitted":
        return need().dispatchesSubmitted();
      case "dispose":
        exec?.dispose();
        exec = null;
        return null;
      default:
        return r satisfies never;
    }
  }

  // Requests run strictly in order: each waits for the one before it.
  let queue: Promise<void> = Promise.resolve();
  port.on("message", (r: Request) => {
    queue = queue.then(async () => {
      let reply: Reply;
      try {
        reply = { ok: true, value: (await handle(r)) ?? null };
      } catch (e) {
        reply = { ok: false, error: wire(e) };
      }
      port.postMessage(reply);
      Atomics.store(signal, 0, 1);
      Atomics.notify(signal, 0);
      if (r.op === "dispose") port.close();
    });
  });
}

// A worker thread's main over the phase loop, the same on every platform: wait for a command, load kernels,
// run regions, exit. The platform entries (worker-node.ts, worker-browser.ts) give it messages and a report channel.

import { type SharedMemory, WA } from "../memory.js";
import { CTL, type KernelFn, participate, type ThreadState, wasmMath } from "./core.js";
import type { NativeRef } from "./native.js";

/** One entry of a load message: kernel id, then a Wasm module and its export, or a native kernel reference. */
export type LoadEntry = readonly [id: number, module: object | NativeRef, entry: string];

/**
 * Starts a worker thread over `memory` (the control block at word `ctl`) and returns its loop. `recv()` returns the
 * next load message, or undefined when none has arrived yet (a browser worker reads messages only between turns of
 * its event loop): `loop` then returns false and is called again once the message is in. `loop` returns true on exit.
 */
export function threadMain(
  memory: SharedMemory,
  ctl: number,
  thread: number,
  recv: () => readonly LoadEntry[] | undefined,
  report: (text: string) => void,
  nativeKernel: (ref: NativeRef) => KernelFn,
): () => boolean {
  const st: ThreadState = {
    i32: new Int32Array(memory.buffer),
    u8: new Uint8Array(memory.buffer),
    ctl,
    fns: [],
    thread,
    port: { postMessage: report },
    grown: 0,
    refresh: () => {
      st.grown = Atomics.load(st.i32, ctl + CTL.GROWN);
      st.i32 = new Int32Array(memory.buffer);
      st.u8 = new Uint8Array(memory.buffer);
    },
  };
  let seen = Atomics.load(st.i32, ctl + CTL.SEQ);
  Atomics.add(st.i32, ctl + CTL.ACK, 1);
  Atomics.notify(st.i32, ctl + CTL.ACK);
  return function loop(): boolean {
    for (;;) {
      while (Atomics.load(st.i32, ctl + CTL.SEQ) === seen) Atomics.wait(st.i32, ctl + CTL.SEQ, seen);
      if (Atomics.load(st.i32, ctl + CTL.GROWN) !== st.grown) st.refresh();
      const seq = Atomics.load(st.i32, ctl + CTL.SEQ);
      // A command stores CMD before SEQ, so a sequence number that is a command's reads as one here; a region's never does.
      const kind = Atomics.load(st.i32, ctl + CTL.CMD) === seq ? Atomics.load(st.i32, ctl + CTL.KIND) : 0;
      if (kind === 2) return true;
      if (kind === 1) {
        const m = recv();
        if (m === undefined) return false;
        for (const [id, mod, entry] of m)
          st.fns[id] =
            mod instanceof WA.Module
              ? (new WA.Instance(mod, { env: { memory }, math: wasmMath }).exports[entry] as KernelFn)
              : nativeKernel(mod as NativeRef);
        seen = seq;
        Atomics.add(st.i32, ctl + CTL.ACK, 1);
        Atomics.notify(st.i32, ctl + CTL.ACK);
        continue;
      }
      seen = participate(st);
    }
  };
}

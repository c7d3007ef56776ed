// The control block's protocol between the host and a worker thread, played on one thread over a shared memory: a
// region that completed without the worker, followed at once by the host's next command, must not swallow that
// command (the worker would never load the kernels and the host would wait 60 s for its acknowledgement).
import { describe, expect, test } from "vitest";
import { WA } from "../src/memory.js";
import { CTL, participate, ROW, THREAD_SLOT, type ThreadState } from "../src/thread/core.js";
import { threadMain } from "../src/thread/main.js";

const CTL_AT = 0;
const ROWS_AT = 64;

function control(): { memory: { buffer: SharedArrayBuffer; grow(p: number): number }; i32: Int32Array } {
  const memory = new WA.Memory({ initial: 1, maximum: 1, shared: true });
  return { memory, i32: new Int32Array(memory.buffer) };
}

/** The host's stores of a region of `n` one-chunk phases starting at `base`, every chunk already run by the host. */
function completedRegion(i32: Int32Array, base: number, n: number): void {
  for (let r = 0; r < n; r++) {
    const row = ROWS_AT + r * ROW.WORDS;
    i32[row + ROW.CHUNKS] = 1;
    i32[row + ROW.CLAIM] = 1;
    i32[row + ROW.DONE] = 1;
  }
  i32[CTL_AT + CTL.ROWS] = ROWS_AT;
  i32[CTL_AT + CTL.NPH] = n;
  i32[CTL_AT + CTL.BASE] = base;
  i32[CTL_AT + CTL.SEQ] = base + n;
}

/** The host's stores of a command (the pool's #command). */
function command(i32: Int32Array, seq: number, kind: 1 | 2): void {
  i32[CTL_AT + CTL.ACK] = 0;
  i32[CTL_AT + CTL.KIND] = kind;
  i32[CTL_AT + CTL.CMD] = seq;
  i32[CTL_AT + CTL.SEQ] = seq;
}

describe("the worker's view of the control block", () => {
  test("a slotted kernel's group ids name the thread, and every call but its first of a phase says it ran (2440)", () => {
    const { i32 } = control();
    const slotted = [1, 1, 0];
    slotted.forEach((s, r) => {
      const row = ROWS_AT + r * ROW.WORDS;
      Object.assign(i32, { [row + ROW.KERNEL]: 0, [row + ROW.ARGS]: 4096, [row + ROW.GX]: 5, [row + ROW.GY]: 1 });
      Object.assign(i32, {
        [row + ROW.GROUPS]: 5,
        [row + ROW.CHUNK]: 2,
        [row + ROW.CHUNKS]: 3,
        [row + ROW.THREADS]: 1,
      });
      i32[row + ROW.SLOTTED] = s;
    });
    i32[CTL_AT + CTL.ROWS] = ROWS_AT;
    i32[CTL_AT + CTL.NPH] = 3;
    i32[CTL_AT + CTL.BASE] = 1;
    i32[CTL_AT + CTL.SEQ] = 1;
    const ids: number[] = [];
    const st: ThreadState = {
      i32,
      u8: new Uint8Array(i32.buffer),
      grown: 0,
      ctl: CTL_AT,
      fns: [(_args, x) => void ids.push(x)],
      thread: 3,
      port: { postMessage: () => {} },
      refresh: () => {},
    };
    expect(participate(st)).toBe(4);
    const tag = 3 << THREAD_SLOT.threadShift,
      ran = (g: number): number => (g | tag | THREAD_SLOT.filled) >>> 0;
    // Workgroup 0, the thread's first call of each phase, without the `filled` bit.
    const phase = [tag, ran(1), ran(2), ran(3), ran(4)];
    expect(ids).toEqual([...phase, ...phase, 0, 1, 2, 3, 4]);
  });

  test("a thread late to a completed region returns the region's end, not the command published after it", () => {
    const { i32 } = control();
    completedRegion(i32, 1, 2);
    command(i32, 4, 1);
    const st: ThreadState = {
      i32,
      u8: new Uint8Array(i32.buffer),
      grown: 0,
      ctl: CTL_AT,
      fns: [],
      thread: 1,
      port: { postMessage: () => {} },
      refresh: () => {},
    };
    expect(participate(st)).toBe(3);
  });

  test("the worker loop tells a command from a region by CMD: it loads, acknowledges, then exits", () => {
    const { memory, i32 } = control();
    const loads: number[] = [];
    const loop = threadMain(
      memory,
      CTL_AT,
      1,
      () => {
        // The host's next command (exit) is published while the worker loads.
        command(i32, 5, 2);
        return [[7, { native: true }, ""]];
      },
      () => {},
      () => {
        loads.push(7);
        return () => {};
      },
    );
    expect(i32[CTL_AT + CTL.ACK]).toBe(1);
    i32[CTL_AT + CTL.ACK] = 0;
    completedRegion(i32, 1, 2);
    command(i32, 4, 1);
    expect(loop()).toBe(true);
    expect(loads).toEqual([7]);
    expect(i32[CTL_AT + CTL.ACK]).toBe(1);
  });
});

// The phase loop every thread of the pool runs (the host thread too) and its Wasm math imports. The worker entries
// (worker-node.ts, worker-browser.ts) are bundled from this module at build time; the host imports it directly.

import { f16BitsToF32, f32ToF16Bits } from "@poot/graph-ir";

/** Words of the control block (an Int32Array window of the shared memory, at `ctl`). */
export const CTL = {
  /** The published phase sequence number: phase `SEQ - BASE` of the current region runs. */
  SEQ: 0,
  /** Sequence number of the region's first phase. */
  BASE: 1,
  /** Phases in the region; `SEQ === BASE + NPH` means the region is complete. */
  NPH: 2,
  /** Word index of the region's first schedule row. */
  ROWS: 3,
  /** What the last command was: 1 load kernels from the port, 2 exit. */
  KIND: 4,
  /** Workers that finished a load (or started). */
  ACK: 5,
  /** Phase-order check on (1): a chunk of row r > 0 checks that every chunk of row r - 1 completed. */
  CHECK: 6,
  /** 1 + the first row whose chunk started before its predecessor completed; 0 when none. */
  VIOLATION: 7,
  /** Planted fault for tests (1): the claimer of a row's first chunk publishes the next row at once. */
  PLANT_EARLY: 8,
  /** 1 + the row whose kernel threw; 0 when none (the message is posted on the thread's port). */
  ERROR: 9,
  /** Bumped when the memory grows, so threads refresh their views. */
  GROWN: 10,
  /** Step profile on: the f64 index of the profile area (see {@link PROFILE_ROWS}); 0 when off. */
  PROF: 11,
  /**
   * The sequence number of the last command. A command publishes `SEQ` like a region but leaves `BASE` and `NPH` as the
   * last region left them, so a thread still in that region ends it without taking the command for its end.
   */
  CMD: 12,
  /** Words in the block. */
  WORDS: 16,
} as const;

/** Words of one schedule row (one phase: a kernel dispatch or a copy). */
export const ROW = {
  /** Kernel id in the pool's table, or -1 for a copy. */
  KERNEL: 0,
  /** Byte address of thread 0's argument block (copy: source address). */
  ARGS: 1,
  /** Bytes between consecutive threads' argument blocks (copy: destination address). */
  STRIDE: 2,
  /** Workgroups along x (copy: bytes). */
  GX: 3,
  /** Workgroups along y. */
  GY: 4,
  /** Workgroups in total. */
  GROUPS: 5,
  /** Workgroups per chunk. */
  CHUNK: 6,
  /** Chunks (claims) in the phase. */
  CHUNKS: 7,
  /** Threads of one workgroup (the kernel runs `[0, THREADS)` of each workgroup it is called for). */
  THREADS: 8,
  /** Claimed chunks (reset to 0 just before the row is published; starts exhausted). */
  CLAIM: 9,
  /** Completed chunks (reset with CLAIM). */
  DONE: 10,
  /** 1 when the row before this one is its predecessor (the phase-order check applies), else 0. */
  CHAINED: 11,
  /** 1 when the kernel takes the calling thread in its group id ({@link THREAD_SLOT}), else 0. */
  SLOTTED: 12,
  /** Words per row. */
  WORDS: 13,
} as const;

/**
 * The group id a slotted native kernel (kernelgen's "fastx" GEMVs, `FASTX_GROUP`, decision 2440) is called with: the
 * workgroup, the calling thread shifted by `threadShift` (its slot of per-thread scratch), and `filled` once that
 * thread has run an earlier workgroup of the same phase (the slot then holds this phase's data).
 */
export const THREAD_SLOT = { threadShift: 24, maxThreads: 128, filled: 0x80000000 } as const;

/**
 * Rows of a region the step profile records (later rows are not timed). The profile area holds f64 columns of this
 * many entries: wall time per row (summed by the thread that publishes the next row), the row's last publish time,
 * then per thread its busy time (running chunks) and its wait time (spinning or sleeping on the row), in ms.
 */
export const PROFILE_ROWS = 1024;

/** A claim counter value that no row can hand out: rows start exhausted until they are published. */
export const EXHAUSTED = 0x3fffffff;

/** A loaded kernel as a phase calls it: one workgroup `(x, y, z)`, threads `[t0, t1)`, arguments at `args`. */
export type KernelFn = (args: number, x: number, y: number, z: number, t0: number, t1: number) => void;

/** What one thread runs regions with. */
export interface ThreadState {
  /** Views over the whole shared memory (remade by `refresh` after it grows). */
  i32: Int32Array;
  u8: Uint8Array;
  /** The GROWN count these views were made at. */
  grown: number;
  /** Word index of the control block. */
  readonly ctl: number;
  /** Loaded kernels by id. */
  readonly fns: KernelFn[];
  /** The thread's index (the host is 0). */
  readonly thread: number;
  /** Where a kernel's error text goes (the host reads it after the region). */
  readonly port: { postMessage(text: string): void };
  /** Remakes the views after the memory grew. */
  readonly refresh: () => void;
  /** The sequence number of the last phase this thread ran a workgroup of (slotted kernels: {@link THREAD_SLOT}). */
  ran?: number;
}

const SPIN = 4000;

/** erf for the kernels' math import (Abramowitz-Stegun style: fast, about 1e-7 relative, as the kernels need). */
function erf(x: number): number {
  const z = Math.abs(x);
  if (z < 0.5) {
    let term = x,
      sum = x;
    for (let n = 1; n < 12; n++) {
      term *= (-x * x) / n;
      sum += term / (2 * n + 1);
    }
    return sum * 1.1283791670955126;
  }
  const t = 1 / (1 + 0.5 * z);
  const p = -1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277));
  const q = 0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * p)));
  const r = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * q));
  return x >= 0 ? 1 - r : r - 1;
}

/** The `math` imports of every kernel module (the same functions on every thread). */
export const wasmMath: Readonly<Record<string, (x: number) => number>> = {
  exp: Math.exp,
  log: Math.log,
  tanh: Math.tanh,
  erf,
  sin: Math.sin,
  cos: Math.cos,
  f16_to_f32: f16BitsToF32,
  f32_to_f16: f32ToF16Bits,
};

function waitChange(i32: Int32Array, at: number, seen: number): void {
  for (let s = 0; s < SPIN; s++) if (Atomics.load(i32, at) !== seen) return;
  Atomics.wait(i32, at, seen, 50);
}

/** The profile clock: comparable across threads (each thread's performance.now() has its own origin). */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

function profilePublish(pf: Float64Array, at: number, idx: number): void {
  if (idx >= PROFILE_ROWS) return;
  const t = now();
  pf[at + idx]! += t - pf[at + PROFILE_ROWS + idx]!;
  if (idx + 1 < PROFILE_ROWS) pf[at + PROFILE_ROWS + idx + 1] = t;
}

function publish(
  i32: Int32Array,
  ctl: number,
  rows: number,
  next: number,
  n: number,
  idx: number,
  pf: Float64Array | null,
  at: number,
): void {
  if (pf !== null) profilePublish(pf, at, idx);
  if (idx + 1 < n) {
    const r = rows + (idx + 1) * ROW.WORDS;
    Atomics.store(i32, r + ROW.DONE, 0);
    Atomics.store(i32, r + ROW.CLAIM, 0);
  }
  Atomics.store(i32, ctl + CTL.SEQ, next);
  Atomics.notify(i32, ctl + CTL.SEQ);
}

function runChunk(st: ThreadState, row: number, k: number, seq: number): void {
  const i32 = st.i32,
    kernel = i32[row + ROW.KERNEL]!;
  if (kernel < 0) {
    const src = i32[row + ROW.ARGS]!,
      dst = i32[row + ROW.STRIDE]!;
    st.u8.copyWithin(dst, src, src + i32[row + ROW.GX]!);
    return;
  }
  const fn = st.fns[kernel]!,
    args = i32[row + ROW.ARGS]! + st.thread * i32[row + ROW.STRIDE]!;
  const gx = i32[row + ROW.GX]!,
    gy = i32[row + ROW.GY]!,
    threads = i32[row + ROW.THREADS]!,
    chunk = i32[row + ROW.CHUNK]!;
  const first = k * chunk,
    last = Math.min(first + chunk, i32[row + ROW.GROUPS]!);
  if (i32[row + ROW.SLOTTED] === 1) {
    // One-dimensional native grid: the group id carries the thread, and whether it already ran this phase.
    const tag = st.thread << THREAD_SLOT.threadShift;
    for (let w = first; w < last; w++) {
      const filled = st.ran === seq ? THREAD_SLOT.filled : 0;
      st.ran = seq;
      fn(args, (w | tag | filled) >>> 0, 0, 0, 0, threads);
    }
    return;
  }
  for (let w = first; w < last; w++) {
    const x = w % gx,
      yz = (w - x) / gx,
      y = yz % gy;
    fn(args, x, y, (yz - y) / gy, 0, threads);
  }
}

/**
 * Runs claimed chunks of the current region until it is complete; returns the region's final sequence number
 * (`BASE + NPH`), or the sequence number it read when that belongs to a later region (the caller then sees the change).
 * The region may complete without this thread and the host publish its next command before this thread looks: the
 * command's number is not returned, so the caller's wait on `SEQ` still sees it.
 */
export function participate(st: ThreadState): number {
  const ctl = st.ctl;
  // The profile switch is read once per region; its view is made on the first claim (the memory may have grown).
  const at = Atomics.load(st.i32, ctl + CTL.PROF);
  let pf: Float64Array | null = null;
  for (;;) {
    // The memory may have grown since this thread's views were made (staging between two regions).
    if (Atomics.load(st.i32, ctl + CTL.GROWN) !== st.grown) st.refresh();
    const i32 = st.i32;
    const seq = Atomics.load(i32, ctl + CTL.SEQ);
    const base = Atomics.load(i32, ctl + CTL.BASE),
      n = Atomics.load(i32, ctl + CTL.NPH),
      idx = seq - base;
    if (idx < 0) return seq;
    if (idx >= n) return base + n;
    if (at !== 0 && pf === null) pf = new Float64Array(i32.buffer);
    const mine = pf !== null && idx < PROFILE_ROWS ? at + (2 + 2 * st.thread) * PROFILE_ROWS + idx : -1;
    const row = Atomics.load(i32, ctl + CTL.ROWS) + idx * ROW.WORDS;
    const chunks = i32[row + ROW.CHUNKS]!;
    const k = Atomics.add(i32, row + ROW.CLAIM, 1);
    if (k >= chunks) {
      const t0 = mine >= 0 ? now() : 0;
      waitChange(i32, ctl + CTL.SEQ, seq);
      if (mine >= 0) pf![mine + PROFILE_ROWS]! += now() - t0;
      continue;
    }
    const plant = Atomics.load(i32, ctl + CTL.PLANT_EARLY) === 1;
    if (plant && k === 0) publish(i32, ctl, Atomics.load(i32, ctl + CTL.ROWS), seq + 1, n, idx, pf, at);
    if (Atomics.load(i32, ctl + CTL.CHECK) === 1 && i32[row + ROW.CHAINED] === 1) {
      const prev = row - ROW.WORDS;
      if (Atomics.load(i32, prev + ROW.DONE) !== i32[prev + ROW.CHUNKS])
        Atomics.compareExchange(i32, ctl + CTL.VIOLATION, 0, idx + 1);
    }
    const t0 = mine >= 0 ? now() : 0;
    try {
      runChunk(st, row, k, seq);
    } catch (e) {
      if (Atomics.compareExchange(i32, ctl + CTL.ERROR, 0, idx + 1) === 0)
        st.port.postMessage(String((e as Error | null)?.stack ?? e));
    }
    if (mine >= 0) pf![mine]! += now() - t0;
    const d = Atomics.add(i32, row + ROW.DONE, 1) + 1;
    if (d === chunks && !plant) publish(i32, ctl, Atomics.load(i32, ctl + CTL.ROWS), seq + 1, n, idx, pf, at);
  }
}

// The host schedule of a step, built once per (program, StateSet, weight binding) and replayed: one row per phase
// (a kernel dispatch or a copy) with its argument blocks, written into the shared memory where every thread reads it.

import type { CpuLaunch } from "./device.js";
import { invariant } from "./errors.js";
import type { CpuMemory } from "./memory.js";
import { EXHAUSTED, ROW, THREAD_SLOT } from "./thread/core.js";

/** One phase before it is written: a kernel over the given buffer addresses, or a byte copy. */
export type Phase =
  | {
      readonly kind: "kernel";
      readonly launch: CpuLaunch;
      readonly grid: readonly [number, number, number];
      readonly label: string;
    }
  | { readonly kind: "copy"; readonly src: number; readonly dst: number; readonly bytes: number };

/** A schedule in the shared memory: `n` rows from word `rows`, plus the argument blocks they point at. */
export interface Schedule {
  /** Word index of the first row. */
  readonly rows: number;
  /** Rows (phases). */
  readonly n: number;
  /** Kernel dispatches among the rows. */
  readonly dispatches: number;
  /** Of those, native GEMVs (decision 0952). */
  readonly native: number;
  /** What each row runs (`op/kind gx×gy×gz` or `copy`): the step profile's labels. */
  readonly labels: readonly string[];
  /** Blocks to free with the schedule (argument blocks; the rows themselves are never reused, see decision 0950). */
  readonly blocks: readonly number[];
}

/** Claims per thread and phase a schedule aims at (the executor option `claimsPerThread`): 16 measured ≈ 2 % faster than 4 on 1B decode (decision 0953). */
export const DEFAULT_CLAIMS = 16;

/** Per-thread work areas: each thread's workgroup shared memory and its frames of thread-private values. */
export interface ThreadAreas {
  /** Byte address of thread t's shared area is `base + t * stride`; its scratch follows at `+ sharedBytes`. */
  readonly base: number;
  readonly stride: number;
  readonly sharedBytes: number;
}

/**
 * Writes `phases` as schedule rows: chunk sizes give each thread several claims per phase (a delayed thread then
 * delays only a chunk it claimed), and each kernel phase gets one argument block per thread.
 */
export function writeSchedule(
  mem: CpuMemory,
  phases: readonly Phase[],
  threads: number,
  areas: ThreadAreas,
  claims = DEFAULT_CLAIMS,
): Schedule {
  const rowsAt = mem.alloc(phases.length * ROW.WORDS * 4);
  const rows = rowsAt >>> 2;
  const blocks: number[] = [];
  const labels: string[] = [];
  let dispatches = 0,
    native = 0;
  phases.forEach((p, i) => {
    const r = rows + i * ROW.WORDS;
    const w = (k: number, v: number): void => void (mem.i32[r + k] = v | 0);
    w(ROW.CLAIM, EXHAUSTED);
    w(ROW.DONE, 0);
    w(ROW.CHAINED, i > 0 ? 1 : 0);
    w(ROW.SLOTTED, 0);
    if (p.kind === "copy") {
      labels.push("copy");
      w(ROW.KERNEL, -1);
      w(ROW.ARGS, p.src);
      w(ROW.STRIDE, p.dst);
      w(ROW.GX, p.bytes);
      w(ROW.GROUPS, 1);
      w(ROW.CHUNK, 1);
      w(ROW.CHUNKS, 1);
      return;
    }
    dispatches++;
    const k = p.launch.kernel;
    if (k.native) native++;
    const [gx, gy, gz] = p.grid;
    const groups = gx * gy * gz;
    labels.push(`${p.label}${k.native ? " native" : ""} ${gx}x${gy}x${gz}`);
    // About `claims` claims per thread: small enough to balance, large enough that claiming costs little.
    const chunk = Math.max(1, Math.ceil(groups / (threads * claims)));
    const words = k.argWords;
    const stride = Math.ceil((words * 4) / 16) * 16;
    const args = mem.alloc(stride * threads);
    blocks.push(args);
    for (let t = 0; t < threads; t++) {
      const a = (args + t * stride) >>> 2;
      let j = 0;
      for (const addr of p.launch.addrs) mem.i32[a + j++] = addr;
      for (const u of p.launch.uniformBits) mem.i32[a + j++] = u;
      mem.i32[a + j++] = gx;
      mem.i32[a + j++] = gy;
      mem.i32[a + j++] = gz;
      const area = areas.base + t * areas.stride;
      mem.i32[a + j++] = area;
      mem.i32[a + j++] = area + areas.sharedBytes;
    }
    w(ROW.KERNEL, k.id);
    w(ROW.ARGS, args);
    w(ROW.STRIDE, stride);
    w(ROW.GX, gx);
    w(ROW.GY, gy);
    w(ROW.GROUPS, groups);
    w(ROW.CHUNK, chunk);
    w(ROW.CHUNKS, Math.ceil(groups / chunk));
    w(ROW.THREADS, k.threads);
    if (k.threadSlots) {
      invariant(gy * gz === 1 && groups <= 1 << THREAD_SLOT.threadShift, `${p.label}: a slotted grid is 1-D, < 2^24`);
      invariant(threads <= THREAD_SLOT.maxThreads, `${p.label}: a slotted kernel runs on at most 128 threads`);
      w(ROW.SLOTTED, 1);
    }
  });
  return { rows, n: phases.length, dispatches, native, labels, blocks };
}

// The interpreter's workgroup scheduler (interp.ts): a workgroup's threads run as generators, each to its next sync
// point; barriers release when every thread reaches them, subgroup ops (shuffles, sums, matrix multiply-accumulates)
// run once per subgroup with every lane's value, and a thread that diverges from the others is an error.

import { KernelRuntimeError } from "./errors.js";
import type { SyncPoint } from "./interp-compile.js";
import type { RaceTracker } from "./interp-memory.js";
import { MMA_LAYOUTS, mmaRun } from "./mma.js";

/** A thread of the interpreter: yields the index of each sync point it reaches. */
export type ThreadGen = Generator<number, void, number>;

/** A thread's builtins (local, global, workgroup ids and counts, sizes, subgroup) and its subgroup-op operand. */
export interface Thread {
  li: number;
  l0: number;
  l1: number;
  l2: number;
  g0: number;
  g1: number;
  g2: number;
  w0: number;
  w1: number;
  w2: number;
  n0: number;
  n1: number;
  n2: number;
  s0: number;
  s1: number;
  s2: number;
  sg: number;
  lane: number;
  sgs: number;
  sv: unknown;
  sl: number;
}

const DONE = -1;

/** Interleaves one workgroup's threads: each runs to its next sync point; barriers and subgroup ops release together. */
export function runWorkgroup(
  kernel: string,
  threads: Thread[],
  gens: ThreadGen[],
  syncs: readonly SyncPoint[],
  sgs: number,
  trackers: RaceTracker[],
  wg: readonly [number, number, number],
): void {
  const n = threads.length;
  // at[i]: the sync point thread i waits at, or DONE; resume[i]: the value to resume it with, undefined = blocked.
  const at = new Int32Array(n).fill(-2);
  const resume: unknown[] = new Array<unknown>(n).fill(0);
  const step = (i: number): void => {
    const r = (gens[i] as ThreadGen).next(resume[i] as number);
    at[i] = r.done === true ? DONE : r.value;
    resume[i] = undefined;
  };
  const detail = (threadsIn: number[]): { workgroup: readonly [number, number, number]; threads: number[] } => ({
    workgroup: wg,
    threads: threadsIn,
  });
  for (;;) {
    for (let i = 0; i < n; i++) if (resume[i] !== undefined) step(i);
    let progressed = false;
    let anySubgroup = false;
    for (let base = 0; base < n; base += sgs) {
      const end = Math.min(base + sgs, n);
      const first = at[base] as number;
      if (first < 0 || (syncs[first] as SyncPoint).kind !== "subgroup") {
        for (let i = base; i < end; i++)
          if ((at[i] as number) >= 0 && (syncs[at[i] as number] as SyncPoint).kind === "subgroup") anySubgroup = true;
        continue;
      }
      anySubgroup = true;
      let same = true;
      for (let i = base; i < end; i++) if (at[i] !== first) same = false;
      if (!same) continue;
      subgroupStep(kernel, syncs[first] as Extract<SyncPoint, { kind: "subgroup" }>, threads, base, end, resume, wg);
      progressed = true;
    }
    if (progressed) continue;
    if (anySubgroup) {
      const lanes = [...at.keys()].filter(
        (i) => (at[i] as number) >= 0 && (syncs[at[i] as number] as SyncPoint).kind === "subgroup",
      );
      const sp = syncs[at[lanes[0] as number] as number] as SyncPoint;
      throw new KernelRuntimeError(
        "subgroup_divergence",
        kernel,
        `subgroup op at ${sp.path}: not every lane of subgroup ${Math.floor((lanes[0] as number) / sgs)} reached it together (workgroup ${wg.join(", ")})`,
        detail(lanes),
      );
    }
    const waiting = [...at.keys()].filter((i) => at[i] !== DONE);
    if (waiting.length === 0) return;
    const b = at[waiting[0] as number] as number;
    const stray = [...at.keys()].filter((i) => at[i] !== b);
    if (stray.length > 0) {
      const what =
        at[stray[0] as number] === DONE
          ? "had returned"
          : `waits at ${(syncs[at[stray[0] as number] as number] as SyncPoint).path}`;
      throw new KernelRuntimeError(
        "barrier_divergence",
        kernel,
        `barrier at ${(syncs[b] as SyncPoint).path}: thread ${waiting[0]} waits there but thread ${stray[0]} ${what} (workgroup ${wg.join(", ")})`,
        detail([waiting[0] as number, stray[0] as number]),
      );
    }
    // Every thread is at the same barrier: a new race interval starts.
    for (const t of trackers) t.epoch++;
    for (let i = 0; i < n; i++) resume[i] = 0;
  }
}

function subgroupStep(
  kernel: string,
  sp: Extract<SyncPoint, { kind: "subgroup" }>,
  threads: Thread[],
  base: number,
  end: number,
  resume: unknown[],
  wg: readonly [number, number, number],
): void {
  const count = end - base;
  if (sp.op === "mma") {
    const lanes = MMA_LAYOUTS[sp.shape].lanes;
    if (count !== lanes) {
      throw new KernelRuntimeError(
        "bad_launch",
        kernel,
        `mma ${sp.shape} at ${sp.path} needs a subgroup of ${lanes} lanes, subgroup ${base / count} has ${count} (launch with subgroupSize ${lanes} and a workgroup of whole subgroups)`,
        { workgroup: wg, threads: [base] },
      );
    }
    const ops = threads.slice(base, end).map((t) => t.sv as [number[], number[], number[]]);
    const d = mmaRun(
      sp.shape,
      sp.input,
      ops.map((o) => o[0]),
      ops.map((o) => o[1]),
      ops.map((o) => o[2]),
    );
    for (let i = 0; i < count; i++) resume[base + i] = d[i];
    return;
  }
  const vals = threads.slice(base, end).map((t) => t.sv as number);
  const wrap = sp.type === "f32" ? Math.fround : sp.type === "i32" ? (v: number) => v | 0 : (v: number) => v >>> 0;
  const src = (lane: number, i: number): number => {
    if (!(lane >= 0 && lane < count)) {
      throw new KernelRuntimeError(
        "out_of_bounds",
        kernel,
        `subgroup ${sp.op} at ${sp.path}: lane ${base + i} reads lane ${lane} of a subgroup of ${count}`,
        { index: lane, length: count, workgroup: wg, threads: [base + i] },
      );
    }
    return vals[lane] as number;
  };
  for (let i = 0; i < count; i++) {
    const t = threads[base + i] as Thread;
    let r: number;
    switch (sp.op) {
      case "reduce_add":
        r = vals.reduce((a, v) => wrap(a + v), 0);
        break;
      case "reduce_max":
        r = Math.max(...vals);
        break;
      case "reduce_min":
        r = Math.min(...vals);
        break;
      case "broadcast": {
        const l0 = (threads[base] as Thread).sl;
        if (t.sl !== l0)
          throw new KernelRuntimeError(
            "subgroup_divergence",
            kernel,
            `broadcast at ${sp.path}: lane operand is not uniform (${l0} vs ${t.sl})`,
            { workgroup: wg, threads: [base, base + i] },
          );
        r = src(t.sl, i);
        break;
      }
      case "shuffle_xor":
        r = src(i ^ t.sl, i);
        break;
      case "shuffle_idx":
        r = src(t.sl, i);
        break;
      default:
        throw new Error(`invariant: subgroup op ${String((sp as { op: unknown }).op)}`);
    }
    resume[base + i] = r;
  }
}

// The thread pool of a CPU executor: `threads - 1` worker threads (the transport starts them) plus the host thread,
// all over one shared memory. A region publishes its phases one Atomics.store at a time; every thread claims chunks.

import { CpuError } from "./errors.js";
import { WA, type CpuMemory } from "./memory.js";
import type { NativeLibrary } from "./native/library.js";
import type { NativeRef } from "./thread/native.js";
import type { ThreadHandle, ThreadTransport } from "./transport.js";
import { CTL, type KernelFn, now, participate, PROFILE_ROWS, ROW, type ThreadState, wasmMath } from "./thread/core.js";

/** One compiled kernel to load on every thread: a Wasm module's export, or a native kernel (decision 0952). */
export type PoolKernel = { readonly module: object; readonly entry: string } | { readonly native: NativeRef };

/** What the step profile recorded per region row (phase index), summed over the regions since the last read, in ms. */
export interface PoolProfile {
  /** Wall time of each row: from its publication to the next row's. */
  readonly wall: Float64Array;
  /** Per thread: time spent running the row's chunks. */
  readonly busy: readonly Float64Array[];
  /** Per thread: time spent spinning or sleeping while the row had no chunk left to claim. */
  readonly wait: readonly Float64Array[];
}

/** Debug switches of a region (tests plant faults and check the protocol with them). */
export interface RegionDebug {
  /** Each chunk of a phase checks that every chunk of the previous phase completed (throws `phase-order` after the region). */
  readonly checkPhaseOrder?: boolean;
  /** Planted fault: the claimer of a phase's first chunk publishes the next phase at once. */
  readonly plantEarlyPublish?: boolean;
}

/** Threads that run regions of phases over one shared memory. */
export class ThreadPool {
  readonly threads: number;
  readonly #mem: CpuMemory;
  readonly #ctl: number;
  readonly #workers: ThreadHandle[] = [];
  readonly #host: ThreadState;
  readonly #native: NativeLibrary | null;
  #hostError = "";
  #seq = 0;
  #kernels = 0;
  #regions = 0;
  #disposed = false;
  #starting = false;
  /** Node's workers start while the host blocks: their start is awaited before the first command, not here. */
  #unacked = false;
  #profileAt = 0;

  constructor(mem: CpuMemory, threads: number, transport: ThreadTransport, native: NativeLibrary | null = null) {
    this.threads = threads;
    this.#native = native;
    this.#mem = mem;
    this.#ctl = mem.alloc(CTL.WORDS * 4) >>> 2;
    const host: ThreadState = {
      i32: mem.i32,
      u8: mem.u8,
      ctl: this.#ctl,
      fns: [],
      thread: 0,
      grown: 0,
      port: { postMessage: (m: string) => void (this.#hostError = m) },
      // The memory's own views are current; the host thread only records that it has seen the growth.
      refresh: () => void (host.grown = Atomics.load(mem.i32, this.#ctl + CTL.GROWN)),
    };
    this.#host = host;
    mem.onGrow = () => {
      host.i32 = mem.i32;
      host.u8 = mem.u8;
      Atomics.add(mem.i32, this.#ctl + CTL.GROWN, 1);
    };
    for (let t = 1; t < threads; t++)
      this.#workers.push(transport.start({ memory: mem.memory, ctl: this.#ctl, thread: t }));
    // Where the workers start while the host blocks (node), the host goes on (opening the model, building the
    // tokenizer) while they start, and waits for their start acknowledgements before its first command or region.
    if (transport.startsWhileBlocked) this.#unacked = threads > 1;
    else this.#starting = threads > 1;
  }

  /** Resolves once every worker thread has started (at once where the transport starts them while blocked). */
  async started(): Promise<void> {
    if (!this.#starting) return;
    const i32 = this.#mem.i32,
      at = this.#ctl + CTL.ACK,
      want = this.threads - 1;
    const deadline = Date.now() + 60_000;
    while (Atomics.load(i32, at) < want) {
      if (Date.now() > deadline)
        throw new CpuError(
          "worker-failed",
          `${want - Atomics.load(i32, at)} of ${want} worker thread(s) did not start within 60 s`,
        );
      await new Promise((ok) => setTimeout(ok, 5));
    }
    Atomics.store(i32, at, 0);
    this.#starting = false;
  }

  /** Regions run so far. */
  get regions(): number {
    return this.#regions;
  }

  /** Instantiates kernels on every thread; returns their ids (in order). */
  load(kernels: readonly PoolKernel[]): number[] {
    if (this.#starting)
      throw new CpuError(
        "worker-failed",
        "the worker threads have not started yet: await the pool's started() (the browser's createCpuExecutor does)",
      );
    const ids = kernels.map(() => this.#kernels++);
    const msg = kernels.map((k, i): readonly [number, object, string] =>
      "native" in k ? [ids[i]!, k.native, ""] : [ids[i]!, k.module, k.entry],
    );
    kernels.forEach((k, i) => {
      if ("native" in k) {
        if (this.#native === null)
          throw new CpuError("unsupported-platform", "a native kernel was loaded on a pool without native kernels");
        this.#host.fns[ids[i]!] = this.#native.hostKernel(k.native);
        return;
      }
      const inst = new WA.Instance(k.module, { env: { memory: this.#mem.memory }, math: wasmMath });
      this.#host.fns[ids[i]!] = inst.exports[k.entry] as KernelFn;
    });
    if (this.threads > 1) {
      for (const w of this.#workers) w.post(msg);
      this.#command(1);
      this.#awaitAck(this.threads - 1, "load kernels");
    }
    return ids;
  }

  /**
   * Runs `n` schedule rows starting at word `rows` as one region: the workers join once, each row is a phase published
   * by one store, and the host thread claims chunks like any worker. Returns when the last phase completed.
   */
  run(rows: number, n: number, debug: RegionDebug = {}): void {
    const i32 = this.#mem.i32,
      c = this.#ctl;
    this.#awaitStart();
    if (debug.checkPhaseOrder === true) Atomics.store(i32, c + CTL.CHECK, 1);
    if (debug.plantEarlyPublish === true) Atomics.store(i32, c + CTL.PLANT_EARLY, 1);
    const base = this.#seq + 1;
    if (this.#profileAt !== 0) new Float64Array(i32.buffer)[(this.#profileAt >>> 3) + PROFILE_ROWS] = now();
    Atomics.store(i32, rows + ROW.DONE, 0);
    Atomics.store(i32, rows + ROW.CLAIM, 0);
    Atomics.store(i32, c + CTL.ROWS, rows);
    Atomics.store(i32, c + CTL.NPH, n);
    Atomics.store(i32, c + CTL.BASE, base);
    Atomics.store(i32, c + CTL.SEQ, base);
    Atomics.notify(i32, c + CTL.SEQ);
    participate(this.#host);
    this.#seq = base + n;
    this.#regions++;
    if (debug.checkPhaseOrder === true || debug.plantEarlyPublish === true) {
      Atomics.store(i32, c + CTL.CHECK, 0);
      Atomics.store(i32, c + CTL.PLANT_EARLY, 0);
    }
    this.#raise(i32);
  }

  /** Turns the step profile on (debug: every thread times its chunks and waits; costs a clock read per chunk). */
  enableProfile(): void {
    if (this.#profileAt !== 0) return;
    const bytes = PROFILE_ROWS * (2 + 2 * this.threads) * 8;
    this.#profileAt = this.#mem.alloc(bytes);
    this.#mem.u8.fill(0, this.#profileAt, this.#profileAt + bytes);
    Atomics.store(this.#mem.i32, this.#ctl + CTL.PROF, this.#profileAt >>> 3);
  }

  /** The profile summed since the last call (then zeroed); null when the profile is off. */
  takeProfile(): PoolProfile | null {
    if (this.#profileAt === 0) return null;
    const f = new Float64Array(this.#mem.memory.buffer, this.#profileAt, PROFILE_ROWS * (2 + 2 * this.threads));
    const col = (c: number): Float64Array => f.slice(c * PROFILE_ROWS, (c + 1) * PROFILE_ROWS);
    const out = { wall: col(0), busy: [] as Float64Array[], wait: [] as Float64Array[] };
    for (let t = 0; t < this.threads; t++) {
      out.busy.push(col(2 + 2 * t));
      out.wait.push(col(3 + 2 * t));
    }
    f.fill(0, 0, PROFILE_ROWS);
    f.fill(0, 2 * PROFILE_ROWS);
    return out;
  }

  #raise(i32: Int32Array): void {
    const c = this.#ctl;
    const err = Atomics.exchange(i32, c + CTL.ERROR, 0);
    const bad = Atomics.exchange(i32, c + CTL.VIOLATION, 0);
    if (err !== 0) {
      let text = this.#hostError;
      for (const w of this.#workers) text ||= w.receive() ?? "";
      this.#hostError = "";
      throw new CpuError("kernel-trap", `phase ${err - 1} trapped: ${text || "(no message)"}`, { phase: err - 1 });
    }
    if (bad !== 0)
      throw new CpuError(
        "phase-order",
        `a chunk of phase ${bad - 1} started before every chunk of phase ${bad - 2} completed`,
        { phase: bad - 1 },
      );
  }

  /** Stops the workers. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    // Workers still starting are terminated without waiting for them.
    if (this.threads > 1 && !this.#unacked) this.#command(2);
    for (const w of this.#workers) w.terminate();
  }

  #awaitStart(): void {
    if (!this.#unacked) return;
    this.#unacked = false;
    this.#awaitAck(this.threads - 1, "start");
  }

  #command(kind: 1 | 2): void {
    this.#awaitStart();
    const i32 = this.#mem.i32,
      c = this.#ctl;
    Atomics.store(i32, c + CTL.ACK, 0);
    Atomics.store(i32, c + CTL.KIND, kind);
    Atomics.store(i32, c + CTL.CMD, ++this.#seq);
    Atomics.store(i32, c + CTL.SEQ, this.#seq);
    Atomics.notify(i32, c + CTL.SEQ);
  }

  #awaitAck(want: number, what: string): void {
    const i32 = this.#mem.i32,
      at = this.#ctl + CTL.ACK;
    const deadline = Date.now() + 60_000;
    for (;;) {
      const have = Atomics.load(i32, at);
      if (have >= want) break;
      if (Date.now() > deadline)
        throw new CpuError("worker-failed", `${want - have} of ${want} worker thread(s) did not ${what} within 60 s`);
      Atomics.wait(i32, at, have, 100);
    }
    Atomics.store(i32, at, 0);
  }
}

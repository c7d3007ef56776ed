// The weight pager (decisions 1704, 1709): on a device whose budget is below the weights placed there, every block is
// its own unit. A paged device has one executor of its own that every paged-in block runs on: paging a block out
// releases its weights there (`Executor.releaseWeights`) while its staged programs stay, so a page-in costs the
// weight reads and the re-upload, not a fresh executor and re-staging. An executor that cannot release weights gets
// the older scheme: a fresh executor per paged-in block, disposed with its weights when the block is paged out.
// Weights are read from the checkpoint by positioned reads per tensor when the block is paged in (never cached on
// the host), the next block's ahead of use on a reader thread while the current one runs (decision 1706); its State
// goes to the host while it is out and comes back with it. Least recently used blocks are evicted first.
import type { Executor, OutputData, StateSet, WeightSource } from "@poot/executor";
import type { ValueType } from "@poot/graph-ir";
import { RuntimeError } from "../errors.js";
import type { Unit } from "./unit.js";
import type { WeightReader } from "./weight-reader.js";

/** Counters of the pager. */
export interface PagerStats {
  /** Blocks paged in (weights read and bound, State restored). */
  pageIns: number;
  /** Blocks paged out (State saved, weights released or their executor freed). */
  pageOuts: number;
  /** Weight bytes read by page-ins. */
  pageInBytes: number;
  /**
   * Milliseconds the step's thread spent on page-ins: State restored, the weight reads (or waits for weights read
   * ahead) and the block's first run after it, where the executor uploads or repacks the weights it binds (the
   * block's own compute, a small part, is in it too); with an executor that cannot release weights, also a fresh
   * executor and staging per page-in.
   */
  stallMs: number;
  /** The part of `stallMs` spent reading weights or waiting for weights read ahead. */
  readWaitMs: number;
  /** Blocks whose weights were read ahead (on the reader thread, while the block before them ran). */
  prefetches: number;
  /** Weight bytes read ahead. */
  prefetchedBytes: number;
  /** Tensors read on the step's thread (not read ahead). */
  syncReads: number;
}

/** What the pager needs from the pipeline. */
export interface PagerHost {
  /** Weight bytes of a unit's blocks. */
  unitWeightBytes(unit: Unit): number;
  /** Frees a unit's staged programs (its executor is about to go). */
  dropStaged(unit: Unit): void;
  /** Creates (or returns) a unit's StateSet on its current executor. */
  unitState(unit: Unit): StateSet | null;
  /** The checkpoint tensors a unit's blocks read. */
  unitConsts(unit: Unit): readonly string[];
}

/** Pages blocks in and out of devices that have a budget. */
export class Pager {
  /** Counters. */
  readonly stats: PagerStats = {
    pageIns: 0,
    pageOuts: 0,
    pageInBytes: 0,
    stallMs: 0,
    readWaitMs: 0,
    prefetches: 0,
    prefetchedBytes: 0,
    syncReads: 0,
  };
  /** Resident paged units per device, least recently used first. */
  private readonly lru = new Map<string, Unit[]>();
  /** Units whose weights are being read ahead. */
  private readonly ahead = new Set<Unit>();
  /** The executor of each paged device that releases weights, made on its first page-in. */
  private readonly shared = new Map<string, Executor>();
  private depth = 0;

  /**
   * @param budgets - weight bytes each paged device may hold.
   * @param factories - makes an executor of each paged device (once per device, or once per page-in where the
   *   executor cannot release weights).
   * @param reader - reads the checkpoint's tensors (positioned reads; ahead of use when it prefetches).
   * @param host - the pipeline.
   */
  constructor(
    readonly budgets: ReadonlyMap<string, number>,
    private readonly factories: ReadonlyMap<string, () => Executor>,
    private readonly reader: WeightReader,
    private readonly host: PagerHost,
  ) {}

  /** The weight source paged-in executors bind: the reader's (with its `into`), its time counted as stall. */
  private readonly source: WeightSource = Object.assign(
    (key: string, type: ValueType) => this.reading(() => this.reader.source(key, type)),
    {
      into: (key: string, type: ValueType, dst: Uint8Array) =>
        this.reading(() => this.reader.source.into?.(key, type, dst) ?? false),
    },
  );

  /** Runs a read of the reader's, counted as stall and as read-wait time. */
  private reading<T>(read: () => T): T {
    const w0 = this.reader.stats.waitMs;
    try {
      return this.time(read);
    } finally {
      this.stats.readWaitMs += this.reader.stats.waitMs - w0;
      this.stats.syncReads = this.reader.stats.syncReads;
    }
  }

  /** Runs `fn` counting its time as page-in stall (nested calls count once). */
  time<T>(fn: () => T): T {
    if (this.depth > 0) return fn();
    const t0 = performance.now();
    this.depth++;
    try {
      return fn();
    } finally {
      this.depth--;
      this.stats.stallMs += performance.now() - t0;
    }
  }

  /**
   * Starts reading `unit`'s weights on the reader thread while `running` runs (no-op when it is resident, already
   * being read, or the reader does not prefetch). Least recently used blocks other than `running` are evicted
   * first so the budget holds the bytes in flight too.
   */
  prefetch(unit: Unit, running: Unit): void {
    if (!unit.paged || unit.resident || !this.reader.prefetch || this.ahead.has(unit)) return;
    this.time(() => {
      const list = this.lru.get(unit.device.name) ?? [];
      this.lru.set(unit.device.name, list);
      const budget = this.budgets.get(unit.device.name)!;
      const need = this.host.unitWeightBytes(unit);
      let used = list.reduce((n, u) => n + this.host.unitWeightBytes(u), 0);
      for (const u of this.ahead) if (u.device.name === unit.device.name) used += this.host.unitWeightBytes(u);
      for (let i = 0; used + need > budget && i < list.length; ) {
        const victim = list[i]!;
        if (victim === running) {
          i++;
          continue;
        }
        used -= this.host.unitWeightBytes(victim);
        this.pageOut(victim);
      }
      if (used + need > budget) return;
      this.reader.request(this.host.unitConsts(unit));
      this.ahead.add(unit);
      this.stats.prefetches++;
      this.stats.prefetchedBytes += need;
    });
  }

  /** Makes `unit` resident (evicting others on its device as the budget needs) and marks it most recently used. */
  pageIn(unit: Unit): void {
    const list = this.lru.get(unit.device.name) ?? [];
    this.lru.set(unit.device.name, list);
    if (unit.resident) {
      const i = list.indexOf(unit);
      if (i >= 0 && i !== list.length - 1) list.splice(i, 1), list.push(unit);
      return;
    }
    this.time(() => this.load(unit, list));
  }

  private load(unit: Unit, list: Unit[]): void {
    this.ahead.delete(unit);
    const budget = this.budgets.get(unit.device.name)!;
    const need = this.host.unitWeightBytes(unit);
    if (need > budget)
      throw new RuntimeError(
        "bad-placement",
        `${unit.key} needs ${need} bytes of weights; the budget of ${unit.device.name} is ${budget}`,
        { param: "budget", value: budget },
      );
    let used = list.reduce((n, u) => n + this.host.unitWeightBytes(u), 0);
    while (used + need > budget) {
      const victim = list.shift()!;
      used -= this.host.unitWeightBytes(victim);
      this.pageOut(victim);
    }
    unit.executor = this.executorFor(unit.device.name);
    unit.freshlyPaged = true;
    list.push(unit);
    const st = this.host.unitState(unit);
    if (unit.saved !== null && st !== null) for (const [k, v] of unit.saved) st.write(k, v);
    this.stats.pageIns++;
    this.stats.pageInBytes += need;
  }

  /** The executor a unit of `device` is paged in on: the device's shared one, or a fresh one (see the header). */
  private executorFor(device: string): Executor {
    const have = this.shared.get(device);
    if (have !== undefined) return have;
    const make = this.factories.get(device);
    if (make === undefined)
      throw new RuntimeError("bad-placement", `device ${device} has a budget but no way to make executors for paging`, {
        param: "budget",
      });
    const ex = make();
    ex.bindWeights(this.source);
    if (ex.releaseWeights !== undefined) this.shared.set(device, ex);
    return ex;
  }

  /** Saves `unit`'s State to the host and frees its State and weights (its programs too, on an executor of its own). */
  pageOut(unit: Unit): void {
    if (!unit.resident) return;
    if (unit.state !== undefined && unit.state !== null) {
      const saved = new Map<string, OutputData>();
      for (const k of unit.state.schema.states.keys()) saved.set(k, unit.state.read(k));
      unit.saved = saved;
    }
    unit.dropState();
    const list = this.lru.get(unit.device.name);
    if (list !== undefined && list.includes(unit)) list.splice(list.indexOf(unit), 1);
    const ex = unit.executor!;
    if (this.shared.get(unit.device.name) === ex) {
      // Weights another resident block reads (a tied embedding and head) stay.
      const kept = new Set((list ?? []).flatMap((u) => this.host.unitConsts(u)));
      ex.releaseWeights!(this.host.unitConsts(unit).filter((k) => !kept.has(k)));
    } else {
      this.host.dropStaged(unit);
      ex.dispose();
    }
    unit.executor = null;
    // Tensors read ahead for it that its programs never took.
    this.reader.forget(this.host.unitConsts(unit));
    this.stats.pageOuts++;
  }

  /** Frees the paged devices' executors (after the pipeline freed their programs) and stops the reader thread. */
  dispose(): void {
    for (const ex of this.shared.values()) ex.dispose();
    this.shared.clear();
    this.reader.dispose();
  }

  /** Resident weight bytes per paged device. */
  residentBytes(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [d, list] of this.lru) out[d] = list.reduce((n, u) => n + this.host.unitWeightBytes(u), 0);
    return out;
  }
}

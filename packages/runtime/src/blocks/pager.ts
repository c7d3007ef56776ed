// The weight pager (decision 1704): on a device whose budget is below the weights placed there, every block is
// its own unit with its own executor while paged in, so paging a block out frees exactly its weights (the
// executor contract binds weights for an executor's lifetime). Weights are read from the checkpoint by
// positioned reads per tensor when the block is paged in; its State goes to the host while it is out and comes
// back with it. Least recently used blocks are evicted first.
import type { Executor, OutputData, StateSet, WeightSource } from "@poot/executor";
import { RuntimeError } from "../errors.js";
import type { Unit } from "./unit.js";

/** Counters of the pager. */
export interface PagerStats {
  /** Blocks paged in (weights read and bound, State restored). */
  pageIns: number;
  /** Blocks paged out (State saved, executor and weights freed). */
  pageOuts: number;
  /** Weight bytes read by page-ins. */
  pageInBytes: number;
  /** Milliseconds steps waited for page-ins (nothing overlaps them yet). */
  stallMs: number;
}

/** What the pager needs from the pipeline. */
export interface PagerHost {
  /** Weight bytes of a unit's blocks. */
  unitWeightBytes(unit: Unit): number;
  /** Frees a unit's staged programs (its executor is about to go). */
  dropStaged(unit: Unit): void;
  /** Creates (or returns) a unit's StateSet on its current executor. */
  unitState(unit: Unit): StateSet | null;
}

/** Pages blocks in and out of devices that have a budget. */
export class Pager {
  /** Counters. */
  readonly stats: PagerStats = { pageIns: 0, pageOuts: 0, pageInBytes: 0, stallMs: 0 };
  /** Resident paged units per device, least recently used first. */
  private readonly lru = new Map<string, Unit[]>();

  /**
   * @param budgets - weight bytes each paged device may hold.
   * @param factories - a fresh executor of each paged device.
   * @param weights - the checkpoint's weight source (read per tensor, positioned reads).
   * @param host - the pipeline.
   */
  constructor(
    readonly budgets: ReadonlyMap<string, number>,
    private readonly factories: ReadonlyMap<string, () => Executor>,
    private readonly weights: WeightSource,
    private readonly host: PagerHost,
  ) {}

  /** Makes `unit` resident (evicting others on its device as the budget needs) and marks it most recently used. */
  pageIn(unit: Unit): void {
    const list = this.lru.get(unit.device.name) ?? [];
    this.lru.set(unit.device.name, list);
    if (unit.resident) {
      const i = list.indexOf(unit);
      if (i >= 0 && i !== list.length - 1) list.splice(i, 1), list.push(unit);
      return;
    }
    const t0 = performance.now();
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
    const make = this.factories.get(unit.device.name);
    if (make === undefined)
      throw new RuntimeError(
        "bad-placement",
        `device ${unit.device.name} has a budget but no way to make executors for paging`,
        { param: "budget" },
      );
    const ex = make();
    ex.bindWeights(this.weights);
    unit.executor = ex;
    list.push(unit);
    const st = this.host.unitState(unit);
    if (unit.saved !== null && st !== null) for (const [k, v] of unit.saved) st.write(k, v);
    this.stats.pageIns++;
    this.stats.pageInBytes += need;
    this.stats.stallMs += performance.now() - t0;
  }

  /** Saves `unit`'s State to the host and frees its programs, State and executor (with its weights). */
  pageOut(unit: Unit): void {
    if (!unit.resident) return;
    if (unit.state !== undefined && unit.state !== null) {
      const saved = new Map<string, OutputData>();
      for (const k of unit.state.schema.states.keys()) saved.set(k, unit.state.read(k));
      unit.saved = saved;
    }
    unit.dropState();
    this.host.dropStaged(unit);
    unit.executor!.dispose();
    unit.executor = null;
    const list = this.lru.get(unit.device.name);
    if (list !== undefined && list.includes(unit)) list.splice(list.indexOf(unit), 1);
    this.stats.pageOuts++;
  }

  /** Resident weight bytes per paged device. */
  residentBytes(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [d, list] of this.lru) out[d] = list.reduce((n, u) => n + this.host.unitWeightBytes(u), 0);
    return out;
  }
}

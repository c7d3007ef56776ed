// Program: the result of compile — the optimized graph (evaluable with PLAN_OPS), what each pass did,
// the declines, and the plans with their kernels, launches, buffers and slot schema.

import { dispatchCount as primitiveDispatches, peakTransientBytes, type Graph, type ValueId } from "@poot/graph-ir";
import { PLAN_OPS } from "./composite/table.js";
import type { Decline, NumericalDecline, PassReport } from "./rules.js";
import type { Target } from "./target.js";
import type { BufferPlan, Plan, SlotSpec } from "./plan/types.js";

/** Dispatch counts split by layer. */
export interface DispatchBreakdown {
  /** Dispatches of each layer index. */
  readonly perLayer: ReadonlyMap<number, number>;
  /** Dispatches outside any layer (embedding, final norm, head). */
  readonly other: number;
  /** Total. */
  readonly total: number;
}

/** What `compile` produced. */
export class Program {
  /** The optimized graph; evaluate it with `{ ops: PLAN_OPS }`. */
  readonly graph: Graph;
  /** The graph compile was given. */
  readonly source: Graph;
  /** The target. */
  readonly target: Target;
  /** Source value id -> optimized value id (values that survived). */
  readonly valueMap: ReadonlyMap<ValueId, ValueId>;
  /** Wall time of compile in milliseconds. */
  readonly compileMs: number;
  private readonly reports: readonly PassReport[];
  private readonly declined: readonly Decline[];
  private readonly numerical: readonly NumericalDecline[];
  private readonly planList: readonly Plan[];
  private readonly bufferPlan: BufferPlan;
  private readonly slotList: readonly SlotSpec[];

  /** Assembled by `compile`; not meant to be built by hand. */
  constructor(init: {
    graph: Graph;
    source: Graph;
    target: Target;
    valueMap: ReadonlyMap<ValueId, ValueId>;
    compileMs: number;
    reports: readonly PassReport[];
    declines: readonly Decline[];
    numericalDeclines: readonly NumericalDecline[];
    plans: readonly Plan[];
    buffers: BufferPlan;
    slots: readonly SlotSpec[];
  }) {
    this.graph = init.graph;
    this.source = init.source;
    this.target = init.target;
    this.valueMap = init.valueMap;
    this.compileMs = init.compileMs;
    this.reports = init.reports;
    this.declined = init.declines;
    this.numerical = init.numericalDeclines;
    this.planList = init.plans;
    this.bufferPlan = init.buffers;
    this.slotList = init.slots;
  }

  /** The op table that types and evaluates `graph` (primitives plus composites). */
  get ops(): typeof PLAN_OPS {
    return PLAN_OPS;
  }

  /** Passes that changed the graph, in order. */
  passes(): readonly PassReport[] {
    return this.reports.filter((r) => Object.keys(r.rewrites).length > 0);
  }

  /** Every pass that ran, changed or not. */
  allPasses(): readonly PassReport[] {
    return this.reports;
  }

  /** RoPE/attention chains that nearly matched, each with the first failed check. */
  declines(): readonly Decline[] {
    return this.declined;
  }

  /** Rewrites declined because they could change rounding. */
  numericalDeclines(): readonly NumericalDecline[] {
    return this.numerical;
  }

  /**
   * Horizontal groups proved by option horizontalFusion "grouped": each an ordered list of consecutive equation
   * indices of `graph` (contractions sharing A, each with its own epilogue and output). Empty when the option is off.
   */
  horizontalGroups(): readonly (readonly number[])[] {
    const groups: number[][] = [];
    this.graph.eqns.forEach((e, k) => {
      const g = e.params.group as { index: number; size: number } | undefined;
      if (g === undefined) return;
      if (g.index === 0) groups.push([]);
      groups[groups.length - 1]!.push(k);
    });
    return groups;
  }

  /** One plan per equation of `graph`. */
  plans(): readonly Plan[] {
    return this.planList;
  }

  /** Kernel launches per step (bind-time preparation excluded). */
  dispatchCount(): number {
    return this.planList.reduce((a, p) => a + (p.phase === "step" ? p.dispatches.length : 0), 0);
  }

  /** Kernel launches run once when weights are bound. */
  bindDispatchCount(): number {
    return this.planList.reduce((a, p) => a + (p.phase === "bind" ? p.dispatches.length : 0), 0);
  }

  /** Launches per step of the unoptimized graph (one per primitive, views free). */
  unfusedDispatchCount(): number {
    return primitiveDispatches(this.source);
  }

  /** Launches by layer. */
  dispatchBreakdown(): DispatchBreakdown {
    const per = new Map<number, number>();
    let other = 0;
    for (const p of this.planList) {
      if (p.phase === "bind") continue;
      if (p.layer === null) other += p.dispatches.length;
      else per.set(p.layer, (per.get(p.layer) ?? 0) + p.dispatches.length);
    }
    return { perLayer: per, other, total: this.dispatchCount() };
  }

  /** The memory plan. */
  buffers(): BufferPlan {
    return this.bufferPlan;
  }

  /** The per-step slot schema. */
  slots(): readonly SlotSpec[] {
    return this.slotList;
  }

  /** Peak bytes of live transients of the optimized graph under graph-ir's liveness model. */
  peakTransientBytes(): number {
    return peakTransientBytes(this.graph, { ops: PLAN_OPS });
  }
}

// One unit: a run of consecutive blocks on one device, run as one staged program with one StateSet (bridging,
// decision 1702). Its graph is cut from each traced graph kind once.
import type { Executor, OutputData, StateSet } from "@poot/executor";
import type { Graph } from "@poot/graph-ir";
import { unitGraph, type BlockCut } from "./cut.js";
import type { BlockDevice } from "./pipeline.js";
import type { UnitSpan } from "./placement.js";

/** A run of consecutive blocks on one device. */
export class Unit {
  /** `device:first-last`, the cache key of its programs. */
  readonly key: string;
  /** Its StateSet: undefined until first use, null when its blocks hold no State (embedding, head). */
  state: StateSet | null | undefined = undefined;
  /** The executor it runs on: its device's, or the pager's while paged in (null while paged out, decision 1709). */
  executor: Executor | null;
  /** Whether the unit is paged (its device's budget is below the weights placed there, decision 1704). */
  readonly paged: boolean;
  /**
   * Paged units: set when paged in, cleared after its first run there (that run binds its weights on the fresh
   * executor: the pager counts it as page-in stall).
   */
  freshlyPaged = false;
  /** Paged units: the State kept on the host while paged out (one array per key, allocated once). */
  saved: Map<string, OutputData> | null = null;
  private readonly graphs = new WeakMap<BlockCut, Graph>();

  /** @param span - its blocks and device name; @param device - the device it runs on. */
  constructor(
    readonly span: UnitSpan,
    readonly device: BlockDevice,
    paged = false,
  ) {
    this.key = Unit.keyOf(span);
    this.paged = paged;
    this.executor = paged ? null : device.executor;
  }

  /** Whether its weights are on its device now (always, unless paged out). */
  get resident(): boolean {
    return this.executor !== null;
  }

  /** The cache key of a span. */
  static keyOf(span: UnitSpan): string {
    return `${span.device}:${span.first}-${span.last}`;
  }

  /** The unit's graph cut from a traced model graph (once per graph). */
  graphOf(cut: BlockCut): Graph {
    let g = this.graphs.get(cut);
    if (g === undefined) {
      g = unitGraph(cut, this.span.first, this.span.last);
      this.graphs.set(cut, g);
    }
    return g;
  }

  /** Its blocks in words, e.g. `embed, layers 0-7`. */
  describe(cut: BlockCut): string {
    const { first, last } = this.span;
    const L = cut.layers;
    const parts: string[] = [];
    if (first === 0) parts.push("embed");
    const lo = Math.max(first, 1) - 1,
      hi = Math.min(last, L) - 1;
    if (hi >= lo) parts.push(lo === hi ? `layer ${lo}` : `layers ${lo}-${hi}`);
    if (last === L + 1) parts.push("head");
    return parts.join(", ");
  }

  /** Frees its StateSet (its staged programs stay cached in the pipeline). */
  dropState(): void {
    this.state?.dispose();
    this.state = undefined;
  }
}

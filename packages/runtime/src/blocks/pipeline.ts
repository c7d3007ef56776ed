// The block pipeline (decisions 1700-1703): a model cut into blocks, each placed on a device; consecutive blocks
// on one device run as one unit (one staged program: bridging). A step runs the units in order; at a device
// boundary the residual stream is read into a host buffer allocated once per program and written into the next
// unit's `residual` slot (the hand-off). Every executor call the block layer makes is in this file and
// ./unit.ts, so moving to another device API changes these two files only.
import {
  schemaOf,
  type Executor,
  type ProgramSchema,
  type StageInput,
  type StagedProgram,
  type StateSet,
} from "@poot/executor";
import type { Graph } from "@poot/graph-ir";
import { RuntimeError, invariant } from "../errors.js";
import { findBlocks, type BlockCut } from "./cut.js";
import { unitSpans, type Placement, type UnitSpan } from "./placement.js";
import { PipelineProgram, PipelineState } from "./program.js";
import { Pager, type PagerStats } from "./pager.js";
import { Unit } from "./unit.js";
import type { WeightReader } from "./weight-reader.js";

/** A device the pipeline can place blocks on: a name and the executor that runs there. */
export interface BlockDevice {
  /** The name placements use (`cpu`, `cuda`, ...). */
  readonly name: string;
  /** Its executor (weights are bound to it lazily by the pipeline). */
  readonly executor: Executor;
}

/** Compiles a unit's graph for its device (e.g. graph-plan's `compile` for the device's target). */
export type UnitCompiler = (graph: Graph, mode: "decode" | "prefill", device: string) => StageInput;

/** Weight budgets: devices whose placed weights exceed theirs page blocks in and out (decision 1704). */
export interface PagingOptions {
  /** Weight bytes each device may hold, by device name. */
  readonly budgets: Readonly<Record<string, number>>;
  /**
   * Makes an executor of each device that may page: called once per device where the executor can release weights
   * (every paged block of the device runs on it), else once per paged-in block (decision 1709).
   */
  readonly factories: Readonly<Record<string, () => Executor>>;
  /** Reads the checkpoint's tensors when a block is paged in (ahead of use when it prefetches, decision 1706). */
  readonly reader: WeightReader;
}

/** Counters of the pipeline's work. */
export interface PipelineStats {
  /** Steps run (each runs every unit once). */
  steps: number;
  /** Residual-stream hand-offs between units (device boundaries crossed). */
  handoffs: number;
  /** Bytes moved by those hand-offs (device to host to device). */
  handoffBytes: number;
  /** Host buffers allocated for hand-offs (once per program and boundary; a steady decode adds none). */
  handoffAllocations: number;
  /** Unit steps recorded for replay (once per unit and StateSet; a relocation re-captures only the units it made). */
  captures: number;
  /** Relocations done. */
  relocations: number;
  /** State bytes moved by relocations. */
  relocatedStateBytes: number;
}

/** Where the blocks are and what a token costs in crossings. */
export interface PlacementReport {
  /** The placement. */
  readonly placement: Placement;
  /** Units (runs of consecutive blocks on one device) run per token. */
  readonly unitsPerToken: number;
  /** Hand-offs of the residual stream per token (units - 1). */
  readonly handoffsPerToken: number;
  /** Bytes one hand-off moves for one decode token. */
  readonly handoffBytesPerToken: number;
  /** Weight bytes of the blocks placed on each device. */
  readonly weightBytesByDevice: Readonly<Record<string, number>>;
  /** The units: device and block range, with their blocks' names. */
  readonly units: readonly {
    readonly device: string;
    readonly first: number;
    readonly last: number;
    readonly blocks: string;
  }[];
  /** Devices that page their blocks, with their budgets (bytes); empty when everything fits. */
  readonly pagedDevices?: Readonly<Record<string, number>>;
}

/** A model's blocks on their devices. */
export class BlockPipeline {
  /** Work counters. */
  readonly stats: PipelineStats = {
    steps: 0,
    handoffs: 0,
    handoffBytes: 0,
    handoffAllocations: 0,
    captures: 0,
    relocations: 0,
    relocatedStateBytes: 0,
  };
  private readonly devices = new Map<string, BlockDevice>();
  private readonly cuts = new WeakMap<Graph, BlockCut>();
  /** Staged unit programs by `device:first-last:name`, kept across relocations (moving back re-stages nothing). */
  private readonly staged = new Map<string, StagedProgram>();
  private readonly programs = new Map<string, PipelineProgram>();
  private current: Unit[] = [];
  private placementNow: Placement;
  /** Bumped by every relocation: programs re-read their units and re-capture. */
  generation = 0;
  /** The pipeline's StateSet (made on first use; survives relocations, its per-unit sets move). */
  private stateSet: PipelineState | null = null;
  /** The pager, when budgets were given. */
  readonly pager: Pager | null = null;
  private readonly budgets: ReadonlyMap<string, number>;

  /**
   * @param devices - every device the placement may name.
   * @param placement - the device of every block.
   * @param compile - turns a unit's graph into what is staged (default: the primitive graph).
   * @param baseGraph - traces the single-token decode graph (the block cut and the state layout come from it).
   */
  constructor(
    devices: readonly BlockDevice[],
    placement: Placement,
    private readonly compile: UnitCompiler | undefined,
    private readonly baseGraph: () => Graph,
    paging?: PagingOptions,
  ) {
    for (const d of devices) this.devices.set(d.name, d);
    this.budgets = new Map(Object.entries(paging?.budgets ?? {}));
    if (paging !== undefined)
      this.pager = new Pager(this.budgets, new Map(Object.entries(paging.factories)), paging.reader, this);
    this.checkPlacement(placement);
    this.placementNow = placement;
    this.current = this.unitsFor(placement, []);
  }

  /** The units of a placement: runs of blocks per device, single blocks on a paged device; `keep` are reused. */
  private unitsFor(p: Placement, keep: readonly Unit[]): Unit[] {
    const cut = this.cut(this.baseGraph());
    const paged = new Set<string>();
    for (const [d, budget] of this.budgets) {
      const seen = new Set<string>();
      let bytes = 0;
      p.devices.forEach((dev, b) => {
        if (dev === d)
          for (const c of cut.blocks[b]!.consts) if (!seen.has(c)) seen.add(c), (bytes += cut.constBytes.get(c)!);
      });
      if (bytes > budget) paged.add(d);
    }
    const spans = unitSpans(p).flatMap((s) =>
      paged.has(s.device)
        ? Array.from({ length: s.last - s.first + 1 }, (_, i) => ({
            device: s.device,
            first: s.first + i,
            last: s.first + i,
          }))
        : [s],
    );
    return spans.map(
      (s) =>
        keep.find((u) => u.key === Unit.keyOf(s) && u.paged === paged.has(s.device)) ??
        new Unit(s, this.deviceOf(s.device), paged.has(s.device)),
    );
  }

  /** @internal Weight bytes of a unit's blocks. */
  unitWeightBytes(unit: Unit): number {
    const cut = this.cut(this.baseGraph());
    const seen = new Set<string>();
    let bytes = 0;
    for (let b = unit.span.first; b <= unit.span.last; b++)
      for (const c of cut.blocks[b]!.consts) if (!seen.has(c)) seen.add(c), (bytes += cut.constBytes.get(c)!);
    return bytes;
  }

  /** @internal The checkpoint tensors a unit's blocks read. */
  unitConsts(unit: Unit): readonly string[] {
    const cut = this.cut(this.baseGraph());
    return [...new Set(cut.blocks.slice(unit.span.first, unit.span.last + 1).flatMap((b) => b.consts))];
  }

  /** @internal Reads `next`'s weights ahead while `running` runs, when `next` is a paged-out unit. */
  prefetch(next: Unit, running: Unit): void {
    if (next.paged && !next.resident) this.pager?.prefetch(next, running);
  }

  /** @internal Frees the staged programs of a unit (before its executor goes). */
  dropStaged(unit: Unit): void {
    for (const [k, p] of this.staged) {
      if (k.startsWith(`${unit.key}:`)) {
        p.dispose();
        this.staged.delete(k);
      }
    }
  }

  /** The pager's counters; null without budgets. */
  get pagerStats(): PagerStats | null {
    return this.pager?.stats ?? null;
  }

  /** The names of the devices a placement may name. */
  get deviceNames(): readonly string[] {
    return [...this.devices.keys()];
  }

  /** The placement now. */
  get placement(): Placement {
    return this.placementNow;
  }

  /** The units now, in order. */
  get units(): readonly Unit[] {
    return this.current;
  }

  /** The block cut of a traced graph (cut once per graph). */
  cut(graph: Graph): BlockCut {
    let c = this.cuts.get(graph);
    if (c === undefined) {
      c = findBlocks(graph);
      this.cuts.set(graph, c);
    }
    return c;
  }

  private deviceOf(name: string): BlockDevice {
    const d = this.devices.get(name);
    if (d === undefined)
      throw new RuntimeError(
        "bad-placement",
        `placement names device "${name}", which is not available (available: ${[...this.devices.keys()].join(", ")})`,
        { param: "placement", value: name },
      );
    return d;
  }

  private checkPlacement(p: Placement): void {
    const blocks = this.cut(this.baseGraph()).blocks.length;
    if (p.devices.length !== blocks)
      throw new RuntimeError(
        "bad-placement",
        `the placement covers ${p.devices.length} blocks; the model has ${blocks} (embed, ${blocks - 2} layers, head)`,
        { param: "placement" },
      );
    for (const d of p.devices) this.deviceOf(d);
  }

  /** The pipeline program of a graph kind `name` (traced by `trace`), staged per unit on first use. */
  program(name: string, mode: "decode" | "prefill", trace: () => Graph): PipelineProgram {
    let p = this.programs.get(name);
    if (p === undefined) {
      p = new PipelineProgram(this, name, mode, trace);
      this.programs.set(name, p);
    }
    return p;
  }

  /** @internal The staged program of one unit for one graph kind (cached by device, range and kind). */
  stageUnit(unit: Unit, name: string, mode: "decode" | "prefill", graph: Graph): StagedProgram {
    const key = `${unit.key}:${name}`;
    let p = this.staged.get(key);
    if (p === undefined) {
      const g = unit.graphOf(this.cut(graph));
      invariant(unit.executor !== null, `unit ${unit.key} is staged while paged out`);
      p = unit.executor.stage(this.compile === undefined ? g : this.compile(g, mode, unit.device.name), {
        name: `${name}@${unit.key}`,
      });
      this.staged.set(key, p);
    }
    return p;
  }

  /** The pipeline's StateSet: one StateSet per unit, created from the unit's single-token program. */
  state(): PipelineState {
    this.stateSet ??= new PipelineState(this);
    return this.stateSet;
  }

  /** @internal The state layout of the whole model (the single-token decode graph's). */
  stateSchema(): ProgramSchema {
    return schemaOf(this.baseGraph());
  }

  /** @internal The StateSet of a unit (created on first use from its single-token decode program). */
  unitState(unit: Unit): StateSet | null {
    if (unit.paged) this.pager!.pageIn(unit);
    if (unit.state === undefined) {
      const p = this.stageUnit(unit, "decode-1", "decode", this.baseGraph());
      unit.state = p.schema.states.size === 0 ? null : p.createState();
    }
    return unit.state;
  }

  /**
   * Moves blocks to the devices of `placement`: units that did not change keep their state and programs; the
   * State of every block that moved is copied from its old device to its new one (through the host), and the
   * next step runs it where it now lives. Its weights are read on the new device the first time it runs there.
   */
  relocate(placement: Placement): void {
    this.checkPlacement(placement);
    const old = this.current;
    const next = this.unitsFor(placement, old);
    if (this.stateSet !== null) {
      const cut = this.cut(this.baseGraph());
      for (const u of next) {
        if (old.includes(u)) continue;
        const keys = cut.blocks.slice(u.span.first, u.span.last + 1).flatMap((b) => b.states);
        if (keys.length === 0) continue;
        const to = this.unitState(u);
        for (const key of keys) {
          const from = old.find((o) => (o.state?.schema.states.has(key) ?? false) || (o.saved?.has(key) ?? false));
          invariant(from !== undefined && to !== null, `state ${key} has no unit to move from`);
          const data = from.state?.schema.states.has(key) === true ? from.state.read(key) : from.saved!.get(key)!;
          to.write(key, data);
          this.stats.relocatedStateBytes += data.byteLength;
        }
      }
    }
    for (const u of old) {
      if (next.includes(u)) continue;
      if (u.paged) this.pager!.pageOut(u);
      u.dropState();
      u.saved = null;
    }
    this.current = next;
    this.placementNow = placement;
    this.generation++;
    this.stats.relocations++;
  }

  /** What the placement costs per token: units, hand-offs and the weight bytes on each device. */
  report(): PlacementReport {
    const cut = this.cut(this.baseGraph());
    const weightBytesByDevice: Record<string, number> = {};
    for (const u of this.current) {
      let bytes = 0;
      const seen = new Set<string>();
      for (let b = u.span.first; b <= u.span.last; b++) {
        for (const c of cut.blocks[b]!.consts) {
          if (seen.has(c)) continue;
          seen.add(c);
          bytes += cut.constBytes.get(c)!;
        }
      }
      weightBytesByDevice[u.device.name] = (weightBytesByDevice[u.device.name] ?? 0) + bytes;
    }
    const n = this.current.length;
    return {
      placement: this.placementNow,
      unitsPerToken: n,
      handoffsPerToken: n - 1,
      handoffBytesPerToken: cut.residualElements * 4,
      weightBytesByDevice,
      units: this.current.map((u) => ({
        device: u.device.name,
        first: u.span.first,
        last: u.span.last,
        blocks: u.describe(cut),
      })),
      pagedDevices: Object.fromEntries(
        [...new Set(this.current.filter((u) => u.paged).map((u) => u.device.name))].map((d) => [
          d,
          this.budgets.get(d)!,
        ]),
      ),
    };
  }

  /** Frees every staged program and StateSet (the executors stay the caller's). */
  dispose(): void {
    for (const u of this.current) {
      if (u.paged) this.pager!.pageOut(u);
      u.dropState();
    }
    for (const p of this.staged.values()) p.dispose();
    this.staged.clear();
    this.programs.clear();
    this.stateSet = null;
    this.pager?.dispose();
  }
}

export type { UnitSpan };

// A pipeline program: one graph kind (decode-1, decode-64, batch-4, ...) run as its units' staged programs in
// order, with the residual stream handed from unit to unit through host buffers allocated once. It has the
// StagedProgram shape, so the engine drives a split model exactly as it drives one staged program.
import { schemaOf, type OutputData, type ProgramSchema, type StagedProgram, type StateSet } from "@poot/executor";
import type { Graph } from "@poot/graph-ir";
import { RuntimeError, invariant } from "../errors.js";
import { RESIDUAL } from "./cut.js";
import type { BlockPipeline } from "./pipeline.js";
import type { Unit } from "./unit.js";

interface Part {
  readonly unit: Unit;
  /** Its staged program (null for a paged unit: staged afresh each time it is paged in). */
  readonly prog: StagedProgram | null;
  /** The host buffer the previous unit's residual stream is read into (null for the first unit). */
  readonly handoff: Float32Array | null;
}

/** One graph kind of a block pipeline, run unit by unit. */
export class PipelineProgram implements StagedProgram {
  /** Slots, states and outputs of the whole model graph (the `residual` slots between units are internal). */
  readonly schema: ProgramSchema;
  private readonly graph: Graph;
  private parts: Part[] = [];
  private generation = -1;
  /** The StateSet each unit program was captured against (a capture stays valid while its unit's state lives). */
  private readonly capturedWith = new Map<StagedProgram, StateSet | null>();
  /** Hand-off buffers by boundary index, reused across relocations when the size matches. */
  private readonly buffers: Float32Array[] = [];
  /** Planted fault for the allocation gate's own test: a fresh hand-off buffer every step. */
  allocateEveryStep = false;

  /** @internal Made by {@link BlockPipeline.program}. */
  constructor(
    private readonly pipeline: BlockPipeline,
    readonly name: string,
    private readonly mode: "decode" | "prefill",
    trace: () => Graph,
  ) {
    this.graph = trace();
    this.schema = schemaOf(this.graph);
    // Stage every unit now, so the engine's staging time and `prepare` cover it.
    this.current();
  }

  /** The units' staged programs for the pipeline's current placement (re-read after a relocation). */
  private current(): Part[] {
    if (this.generation !== this.pipeline.generation) {
      const units = this.pipeline.units;
      this.parts = units.map((unit, i) => {
        const prog = unit.paged ? null : this.pipeline.stageUnit(unit, this.name, this.mode, this.graph);
        let handoff: Float32Array | null = null;
        if (i > 0) {
          const size = this.pipeline.cut(this.graph).residualElements;
          if (this.buffers[i]?.length !== size) {
            this.buffers[i] = new Float32Array(size);
            this.pipeline.stats.handoffAllocations++;
          }
          handoff = this.buffers[i]!;
        }
        return { unit, prog, handoff };
      });
      this.generation = this.pipeline.generation;
    }
    return this.parts;
  }

  createState(): StateSet {
    return this.pipeline.state();
  }

  writeSlot(key: string, data: ArrayLike<number>): void {
    if (!this.schema.slots.has(key))
      throw new RuntimeError("bad-config", `program ${this.name} has no slot "${key}"`, { param: key });
    for (const p of this.current()) {
      if (p.prog === null) (this.pending ??= new Map()).set(key, data);
      else if (p.prog.schema.slots.has(key)) p.prog.writeSlot(key, data);
    }
  }

  /** Slots written this step, for paged units (their programs exist only once they are paged in). */
  private pending: Map<string, ArrayLike<number>> | null = null;

  /** The program of part `p`, paging its unit in (and writing the step's slots) when it is paged. */
  private programOf(p: Part): StagedProgram {
    if (p.prog !== null) return p.prog;
    const stage = (): StagedProgram => {
      this.pipeline.unitState(p.unit);
      const prog = this.pipeline.stageUnit(p.unit, this.name, this.mode, this.graph);
      if (this.pending !== null) for (const [k, v] of this.pending) if (prog.schema.slots.has(k)) prog.writeSlot(k, v);
      return prog;
    };
    // Paging a unit in and staging it there is page-in stall (decision 1706).
    return this.pipeline.pager === null ? stage() : this.pipeline.pager.time(stage);
  }

  /** Runs a unit's step; its first run after a page-in (weights bound on the fresh executor) counts as stall. */
  private runPart(unit: Unit, prog: StagedProgram, s: StateSet | null): void {
    if (!unit.freshlyPaged || this.pipeline.pager === null) return prog.run(s ?? undefined);
    unit.freshlyPaged = false;
    this.pipeline.pager.time(() => prog.run(s ?? undefined));
  }

  /** Starts reading the weights of the unit after part `i` (the first, for the next step, after the last). */
  private readAhead(parts: readonly Part[], i: number): void {
    if (parts.length > 1) this.pipeline.prefetch(parts[(i + 1) % parts.length]!.unit, parts[i]!.unit);
  }

  /** Copies unit `i - 1`'s residual stream into unit `i`'s `residual` slot. */
  private handoff(parts: readonly Part[], i: number): void {
    const to = parts[i]!;
    let buf = to.handoff!;
    if (this.allocateEveryStep) {
      buf = new Float32Array(buf.length);
      this.pipeline.stats.handoffAllocations++;
    }
    const got = this.programOf(parts[i - 1]!).readOutput(RESIDUAL, buf);
    this.programOf(to).writeSlot(RESIDUAL, got);
    this.pipeline.stats.handoffs++;
    this.pipeline.stats.handoffBytes += buf.byteLength;
  }

  run(state?: StateSet): void {
    this.checkState(state);
    const parts = this.current();
    for (let i = 0; i < parts.length; i++) {
      if (i > 0) this.handoff(parts, i);
      const prog = this.programOf(parts[i]!);
      const s = this.pipeline.unitState(parts[i]!.unit);
      this.readAhead(parts, i);
      this.runPart(parts[i]!.unit, prog, s);
    }
    this.pipeline.stats.steps++;
  }

  readOutput(name: string, into?: OutputData): OutputData {
    const parts = this.current();
    return this.programOf(parts[parts.length - 1]!).readOutput(name, into);
  }

  /**
   * Asks for the units' steps to be recorded: each unit is captured in `replay`, after its `residual` slot is
   * written (a unit cannot be recorded before its input exists); units whose device cannot capture run plainly.
   * Always true.
   */
  capture(state?: StateSet): boolean {
    this.checkState(state);
    this.current();
    return true;
  }

  private captureUnit(p: Part): void {
    // A paged unit's programs live only while it is paged in: it runs plainly.
    if (p.prog === null) return;
    const s = this.pipeline.unitState(p.unit);
    if (p.unit.device.executor.caps.capture && p.prog.capture(s ?? undefined)) {
      this.capturedWith.set(p.prog, s);
      this.pipeline.stats.captures++;
    } else this.capturedWith.delete(p.prog);
  }

  /** Replays each unit's captured step (capturing again only the units a relocation changed). */
  replay(): void {
    const parts = this.current();
    for (let i = 0; i < parts.length; i++) {
      if (i > 0) this.handoff(parts, i);
      const p = parts[i]!;
      const prog = this.programOf(p);
      const s = this.pipeline.unitState(p.unit);
      if (p.prog !== null && this.capturedWith.get(p.prog) !== s) this.captureUnit(p);
      this.readAhead(parts, i);
      if (this.capturedWith.has(prog)) prog.replay();
      else this.runPart(p.unit, prog, s);
    }
    this.pipeline.stats.steps++;
  }

  private checkState(state: StateSet | undefined): void {
    if (state !== undefined && state !== this.pipeline.state())
      throw new RuntimeError("bad-config", `program ${this.name} runs only on its pipeline's StateSet`);
  }

  /** Nothing: the pipeline owns the unit programs. */
  dispose(): void {}
}

/** The StateSet of a pipeline: each key lives in the StateSet of the unit that owns its block. */
export class PipelineState implements StateSet {
  readonly schema: ProgramSchema;

  /** @internal Made by {@link BlockPipeline.state}. */
  constructor(private readonly pipeline: BlockPipeline) {
    this.schema = pipeline.stateSchema();
  }

  get lanes(): number {
    for (const u of this.pipeline.units) {
      const s = this.pipeline.unitState(u);
      if (s !== null) return s.lanes;
    }
    return 1;
  }

  private owner(key: string): StateSet {
    for (const u of this.pipeline.units) {
      const s = this.pipeline.unitState(u);
      if (s !== null && s.schema.states.has(key)) return s;
    }
    throw new RuntimeError("bad-config", `no block owns state "${key}"`, { param: key });
  }

  read(key: string): OutputData {
    return this.owner(key).read(key);
  }

  write(key: string, data: ArrayLike<number>): void {
    this.owner(key).write(key, data);
  }

  copyLanes(from: StateSet, fromLane: number, toLane: number, count = 1): void {
    invariant(from === this, "a pipeline StateSet copies lanes only within itself");
    for (const u of this.pipeline.units) {
      const s = this.pipeline.unitState(u);
      s?.copyLanes(s, fromLane, toLane, count);
    }
  }

  zero(): void {
    for (const u of this.pipeline.units) this.pipeline.unitState(u)?.zero();
  }

  get bytes(): number {
    let n = 0;
    for (const u of this.pipeline.units) n += this.pipeline.unitState(u)?.bytes ?? 0;
    return n;
  }

  /** Frees every unit's StateSet. */
  dispose(): void {
    for (const u of this.pipeline.units) u.dropState();
  }
}

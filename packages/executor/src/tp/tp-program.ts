// A tensor-parallel staged program (decision 2501): every rank's segment programs, run segment by segment from
// one driving thread; between segments the collective plans run on the host (all-reduce in rank order) and each
// rank's carried values go back into its own next segment. It has the StagedProgram shape, so the runtime drives
// N ranks exactly as it drives one device.
import { invariant, type ShardedProgram } from "@poot/graph-plan";
import type { OutputData, StagedProgram, StateSet } from "../contract.js";
import { ExecutorError } from "../errors.js";
import { schemaOf, type ProgramSchema } from "../schema.js";
import { allGather, allReduceSum } from "./host-collectives.js";
import { TensorParallelStateSet } from "./tp-state.js";

/** Timing counters of a tensor-parallel program. */
export interface CollectiveStats {
  /** Collectives run. */
  count: number;
  /** Milliseconds spent in them (reading partials, reducing, writing results). */
  ms: number;
}

/** The staged program of a tensor-parallel group. */
export class TensorParallelStagedProgram implements StagedProgram {
  /** Slots, states and outputs of the whole (unsharded) graph. */
  readonly schema: ProgramSchema;
  /** Collective counters since staging. */
  readonly stats: CollectiveStats = { count: 0, ms: 0 };
  /**
   * Planted fault for the equality gate's own test: the all-reduce of this collective index is skipped (each
   * rank keeps its own partial sum).
   */
  dropCollective: number | null = null;

  /** @internal Made by the tensor-parallel executor's `stage`. */
  constructor(
    readonly name: string,
    readonly plan: ShardedProgram,
    private readonly progs: readonly (readonly StagedProgram[])[],
  ) {
    this.schema = schemaOf(plan.source);
  }

  createState(): StateSet {
    return new TensorParallelStateSet(this.schema, this.progs, this.plan.stateAxes);
  }

  writeSlot(key: string, data: ArrayLike<number>): void {
    if (!this.schema.slots.has(key))
      throw new ExecutorError("unknown-slot", `program ${this.name} has no slot "${key}"`, { program: this.name, key });
    for (const segs of this.progs) for (const p of segs) if (p.schema.slots.has(key)) p.writeSlot(key, data);
  }

  run(state?: StateSet): void {
    if (state !== undefined && !(state instanceof TensorParallelStateSet))
      throw new ExecutorError("state-mismatch", `program ${this.name} runs with its own tensor-parallel StateSet`, {
        program: this.name,
      });
    const ranks = this.progs.length;
    const results: OutputData[] = [];
    const carries = new Map<string, OutputData[]>();
    this.plan.segments.forEach((seg, s) => {
      for (let r = 0; r < ranks; r++) {
        const p = this.progs[r]![s]!;
        for (const inp of seg.inputs)
          p.writeSlot(inp.key, inp.kind === "carry" ? carries.get(inp.output)![r]! : results[inp.index]!);
        p.run(state?.partFor(r, p));
      }
      for (const out of this.carriedFrom(s))
        carries.set(
          out,
          this.progs.map((segs) => segs[s]!.readOutput(out)),
        );
      for (const c of this.plan.collectives) {
        if (c.segment !== s) continue;
        const t0 = performance.now();
        const parts = this.progs.map((segs) => segs[s]!.readOutput(c.output));
        if (c.kind === "all-reduce")
          results[c.index] =
            this.dropCollective === c.index ? parts[0]! : allReduceSum(parts, new Float32Array(parts[0]!.length));
        else results[c.index] = allGather(parts, c.shape, c.axis!);
        this.stats.count++;
        this.stats.ms += performance.now() - t0;
      }
    });
  }

  private carryCache: string[][] | null = null;

  /** Output names of segment `s` that later segments read as carries. */
  private carriedFrom(s: number): readonly string[] {
    if (this.carryCache === null) {
      const per: string[][] = this.plan.segments.map(() => []);
      for (const seg of this.plan.segments)
        for (const inp of seg.inputs)
          if (inp.kind === "carry" && !per[inp.segment]!.includes(inp.output)) per[inp.segment]!.push(inp.output);
      this.carryCache = per;
    }
    return this.carryCache[s]!;
  }

  readOutput(name: string, into?: OutputData): OutputData {
    const s = this.plan.outputs.get(name);
    if (s === undefined)
      throw new ExecutorError("unknown-output", `program ${this.name} has no output "${name}"`, {
        program: this.name,
        key: name,
      });
    invariant(this.progs[0]![s] !== undefined, `output ${name} in segment ${s}`);
    return this.progs[0]![s]!.readOutput(name, into);
  }

  capture(): boolean {
    return false;
  }

  replay(): void {
    throw new ExecutorError("not-captured", `program ${this.name}: a tensor-parallel step is not captured`, {
      program: this.name,
    });
  }

  dispose(): void {
    for (const segs of this.progs) for (const p of segs) p.dispose();
  }
}

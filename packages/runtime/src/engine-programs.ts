// The engine's staged programs: each traced graph staged once by name (on the executor, or across a block
// pipeline), the paging slots a step writes, and the capture-once/replay of the single-token decode step.
import type { Executor, StagedProgram, StageInput, StateSet } from "@poot/executor";
import type { Graph } from "@poot/graph-ir";
import type { BlockPipeline } from "./blocks/pipeline.js";
import type { EngineStats } from "./engine-options.js";
import type { Session } from "./session.js";

/** Where a sequence's new tokens go: its session and the position of the first of them. */
export interface PagedSequence {
  /** The session whose pages the tokens are written to. */
  readonly session: Session;
  /** Position of the first new token. */
  readonly start: number;
}

/** What {@link writePaging} needs of the engine's paged layout. */
export interface PagingShape {
  /** Pages in one row of the page table (a full context). */
  readonly pagesPerSequence: number;
  /** Tokens per KV page. */
  readonly pageSize: number;
  /** Whether programs read a `state_lane` slot (the model has recurrent state). */
  readonly lanes: boolean;
}

/** Writes the page-table, slot-map and lane slots of `seqs` running `tokens` new tokens each from their lengths. */
export function writePaging(
  p: StagedProgram,
  shape: PagingShape,
  seqs: readonly PagedSequence[],
  tokens: number,
): void {
  const per = shape.pagesPerSequence,
    ps = shape.pageSize;
  const table = new Int32Array(seqs.length * per),
    map = new Int32Array(seqs.length * tokens);
  seqs.forEach(({ session, start }, i) => {
    const pages = session.pages;
    table.set(pages, i * per);
    for (let t = 0; t < tokens; t++) {
      const at = start + t;
      map[i * tokens + t] = pages[Math.floor(at / ps)]! * ps + (at % ps);
    }
  });
  p.writeSlot("page_table", table);
  p.writeSlot("slot_map", map);
  if (shape.lanes)
    p.writeSlot(
      "state_lane",
      seqs.map(({ session }) => session.lane!),
    );
}

/** The programs an engine has staged, by name, and whether its single-token step has been captured. */
export class EnginePrograms {
  private readonly programs = new Map<string, StagedProgram>();
  /** Whether the single-token decode program has been captured (against the shared StateSet). */
  private captured = false;

  /**
   * @param executor - where programs are staged without a pipeline.
   * @param pipeline - the blocks on their devices, or null to stage one program on `executor`.
   * @param compileGraph - turns a traced graph into what is staged (default: the graph itself).
   * @param stats - the engine's counters (programs staged, staging time, captures and replays).
   */
  constructor(
    private readonly executor: Executor,
    private readonly pipeline: BlockPipeline | null,
    private readonly compileGraph: ((graph: Graph, mode: "decode" | "prefill") => StageInput) | undefined,
    private readonly stats: EngineStats,
  ) {}

  /** The program `name`, traced by `trace` and staged on first use. */
  staged(name: string, mode: "decode" | "prefill", trace: () => Graph): StagedProgram {
    let p = this.programs.get(name);
    if (p === undefined) {
      const t0 = performance.now();
      if (this.pipeline !== null) p = this.pipeline.program(name, mode, trace);
      else {
        const g = trace();
        p = this.executor.stage(this.compileGraph === undefined ? g : this.compileGraph(g, mode), { name });
      }
      this.stats.stageMs += performance.now() - t0;
      this.stats.programsStaged++;
      this.programs.set(name, p);
    }
    return p;
  }

  /**
   * One single-token step: captured once against the shared StateSet (CUDA graphs, command buffers, host
   * schedules) and replayed for every session after, since which pages and lane a step uses are slots.
   */
  decodeStep(p: StagedProgram, state: StateSet): void {
    // A pipeline captures what each unit's device can and runs the rest (its capture always succeeds).
    if (this.pipeline === null && !this.executor.caps.capture) {
      p.run(state);
      return;
    }
    if (!this.captured) {
      if (!p.capture(state)) {
        p.run(state);
        return;
      }
      this.captured = true;
      this.stats.captures++;
    } else this.stats.replays++;
    p.replay();
  }

  /** Disposes every staged program. */
  dispose(): void {
    for (const p of this.programs.values()) p.dispose();
    this.programs.clear();
  }
}

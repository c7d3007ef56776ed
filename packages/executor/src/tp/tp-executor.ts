// A tensor-parallel group as one Executor (decision 2501): N executors of one backend, each a rank; `stage` shards
// the primitive graph with @poot/graph-plan's shardGraph and stages every rank's segments on its executor; each
// rank's weights are its shards, sliced from the bound source when first read.
import { parseShardKey, shardGraph, type ShardedProgram, type ShardOptions } from "@poot/graph-plan";
import type { Graph, ValueType } from "@poot/graph-ir";
import {
  stageParts,
  type DeviceBytes,
  type Executor,
  type ExecutorCaps,
  type StageInput,
  type StageOptions,
  type WeightSource,
} from "../contract.js";
import { ExecutorError } from "../errors.js";
import { slicePiece } from "./host-collectives.js";
import { TensorParallelStagedProgram } from "./tp-program.js";

/** Options of {@link TensorParallelExecutor}. */
export interface TensorParallelOptions {
  /** Which weights are split (default graph-plan's `SHARD_RULES`). */
  readonly rules?: ShardOptions["rules"];
}

/** N executors run as one tensor-parallel group; the runtime stages and steps it like any executor. */
export class TensorParallelExecutor implements Executor {
  /** The group's capabilities: the ranks' dtypes, no capture (a step is driven segment by segment). */
  readonly caps: ExecutorCaps;
  /** The programs staged so far (for counters and explain). */
  readonly programs: TensorParallelStagedProgram[] = [];
  /**
   * Planted fault for the equality gate's own test: programs staged from now on skip this collective (each rank
   * keeps its own partial sum); null (default) runs every collective.
   */
  dropCollective: number | null = null;

  /** @param ranks - one executor per rank, all of one backend (rank 0 first); @param options - sharding options. */
  constructor(
    readonly ranks: readonly Executor[],
    private readonly options: TensorParallelOptions = {},
  ) {
    if (ranks.length < 1)
      throw new ExecutorError("unsupported-program", "a tensor-parallel group needs at least one rank");
    const c = ranks[0]!.caps;
    this.caps = {
      kind: c.kind,
      device: `${ranks.length} ranks of ${c.device} (tensor parallel)`,
      dtypes: c.dtypes,
      capture: false,
      deviceMemoryBytes: c.deviceMemoryBytes === null ? null : c.deviceMemoryBytes * ranks.length,
    };
  }

  bindWeights(source: WeightSource): void {
    this.ranks.forEach((e, rank) => e.bindWeights(rankWeights(source, rank)));
  }

  /** Shards a primitive graph into per-rank segment graphs and stages them; a compiled graph is refused. */
  stage(input: StageInput, options?: StageOptions): TensorParallelStagedProgram {
    const { graph, ops } = stageParts(input);
    const name = options?.name ?? "program";
    if (ops !== undefined)
      throw new ExecutorError(
        "unsupported-program",
        "tensor parallelism shards the traced graph: stage it uncompiled",
        {
          program: name,
        },
      );
    const plan = this.shard(graph);
    const progs = plan.graphs.map((segs, r) =>
      segs.map((g, s) => this.ranks[r]!.stage(g, { name: `${name}.tp${r}.s${s}` })),
    );
    const p = new TensorParallelStagedProgram(name, plan, progs);
    p.dropCollective = this.dropCollective;
    this.programs.push(p);
    return p;
  }

  /** The sharding of a graph for this group (what `stage` runs; `poot compile --tp` prints its `explain`). */
  shard(graph: Graph): ShardedProgram {
    return shardGraph(graph, {
      ranks: this.ranks.length,
      ...(this.options.rules === undefined ? {} : { rules: this.options.rules }),
    });
  }

  deviceBytes(): DeviceBytes {
    const all = this.ranks.map((e) => e.deviceBytes());
    const sum = (k: keyof DeviceBytes) => all.reduce((a, b) => a + b[k], 0);
    return { weights: sum("weights"), state: sum("state"), io: sum("io"), total: sum("total") };
  }

  dispatchesSubmitted(): number {
    return this.ranks.reduce((a, e) => a + (e.dispatchesSubmitted?.() ?? 0), 0);
  }

  /** Collectives run and milliseconds spent in them, over every staged program. */
  collectiveStats(): { count: number; ms: number } {
    return this.programs.reduce((a, p) => ({ count: a.count + p.stats.count, ms: a.ms + p.stats.ms }), {
      count: 0,
      ms: 0,
    });
  }

  dispose(): void {
    for (const e of this.ranks) e.dispose();
  }
}

/** The weight source of one rank: shard keys (`name|tpRofN@axis`) are read whole from `source` and sliced. */
export function rankWeights(source: WeightSource, rank: number): WeightSource {
  return (key: string, type: ValueType) => {
    const s = parseShardKey(key);
    if (s === null) return source(key, type);
    if (s.rank !== rank)
      throw new ExecutorError("weight-mismatch", `rank ${rank} asked for rank ${s.rank}'s shard`, { key });
    const whole = [...type.shape];
    whole[s.axis] = whole[s.axis]! * s.ranks;
    return slicePiece(source(s.key, { dtype: type.dtype, shape: whole }), whole, s.axis, s.rank, s.ranks);
  };
}

// The tensor-parallel program (decision 2500): per-rank segment graphs, the collective plans between segments and
// the weight shards; `explain` lists shards and collectives per step (count and bytes).
import { numel, storageBytes, type DType, type Graph } from "@poot/graph-ir";
import { segment, type SegmentPlan } from "./emit.js";
import type { CollectiveKind, LogicalGraph } from "./logical.js";
import { shardLogical, type ShardOptions } from "./propagate.js";

/** One cross-rank collective of a step: the plan kind a tensor-parallel driver executes between segments. */
export interface CollectivePlan {
  /** Its index (also in its slot key `tp.collective.<index>`). */
  readonly index: number;
  /** All-reduce (sum in rank order) or all-gather (concatenate in rank order). */
  readonly kind: CollectiveKind;
  /** The all-gather axis, null for all-reduce. */
  readonly axis: number | null;
  /** The segment whose output it reads (`output`); its result fills slots of later segments. */
  readonly segment: number;
  /** Output name in that segment. */
  readonly output: string;
  /** The value's debug name, or the weight it was computed from. */
  readonly name: string;
  /** Element type. */
  readonly dtype: DType;
  /** The whole result's shape. */
  readonly shape: readonly number[];
  /** Bytes of the whole result (each rank's contribution to an all-reduce has this size). */
  readonly bytes: number;
}

/** One rank's piece of a split weight. */
export interface WeightShardInfo {
  /** Checkpoint tensor name. */
  readonly key: string;
  /** The axis split. */
  readonly axis: number;
  /** The whole tensor's shape. */
  readonly shape: readonly number[];
  /** Bytes of the whole tensor. */
  readonly bytes: number;
}

/** A graph sharded for `ranks` ranks. */
export class ShardedProgram {
  /** Ranks. */
  readonly ranks: number;
  /** The graph that was sharded. */
  readonly source: Graph;
  /** `graphs[rank][segment]`: plain primitive graphs, each staged on its rank's executor. */
  readonly graphs: readonly (readonly Graph[])[];
  /** Each segment's cross-segment slots. */
  readonly segments: readonly SegmentPlan[];
  /** The collectives of one step, in order. */
  readonly collectives: readonly CollectivePlan[];
  /** Split weights. */
  readonly shards: readonly WeightShardInfo[];
  /** Segment holding each graph output (on every rank). */
  readonly outputs: ReadonlyMap<string, number>;
  /** The axis each State is split on across ranks, null where every rank holds it whole. */
  readonly stateAxes: ReadonlyMap<string, number | null>;

  /** Built by {@link shardGraph}. */
  constructor(source: Graph, lg: LogicalGraph) {
    const cut = segment(lg);
    this.ranks = lg.ranks;
    this.source = source;
    this.graphs = cut.graphs;
    this.segments = cut.segments;
    this.outputs = cut.outputs;
    this.stateAxes = new Map(
      lg.states.map((st) => {
        const sh = lg.values[st.input]!.sharding;
        return [st.key, sh.kind === "split" ? sh.axis : null];
      }),
    );
    let i = 0;
    const collectives: CollectivePlan[] = [];
    for (const e of lg.eqns) {
      if (e.kind !== "collective") continue;
      const v = lg.values[e.out]!;
      const src = cut.sources[i]!;
      collectives.push({
        index: i++,
        kind: e.collective,
        axis: e.axis,
        segment: src.segment,
        output: src.output,
        name: lg.values[e.input]!.name ?? lg.values[e.input]!.origin ?? `%${e.input}`,
        dtype: v.dtype,
        shape: v.shape,
        bytes: storageBytes(v.dtype, numel(v.shape)),
      });
    }
    this.collectives = collectives;
    const seen = new Map<string, WeightShardInfo>();
    for (const v of lg.values)
      if (v.weightOf !== undefined && v.sharding.kind === "split" && !seen.has(v.weightOf))
        seen.set(v.weightOf, {
          key: v.weightOf,
          axis: v.sharding.axis,
          shape: v.shape,
          bytes: storageBytes(v.dtype, numel(v.shape)),
        });
    this.shards = [...seen.values()];
  }

  /** Collectives per step by kind: count and bytes of the whole results. */
  collectivesPerStep(): Readonly<Record<CollectiveKind, { count: number; bytes: number }>> {
    const r = { "all-reduce": { count: 0, bytes: 0 }, "all-gather": { count: 0, bytes: 0 } };
    for (const c of this.collectives) {
      r[c.kind].count++;
      r[c.kind].bytes += c.bytes;
    }
    return r;
  }

  /** Bytes of split weights each rank holds (whole tensors divided by the ranks). */
  shardBytesPerRank(): number {
    return this.shards.reduce((a, s) => a + s.bytes / this.ranks, 0);
  }

  /** A human-readable summary: shards, segments and the collectives of one step. */
  explain(): string {
    const lines = [`tensor parallel: ${this.ranks} ranks, ${this.segments.length} segments per rank per step`];
    lines.push(`  weights split: ${this.shards.length} tensors, ${mib(this.shardBytesPerRank())} per rank`);
    for (const s of this.shards)
      lines.push(
        `    ${s.key} [${s.shape.join(", ")}] split on axis ${s.axis} -> ${s.shape[s.axis]! / this.ranks} per rank`,
      );
    const per = this.collectivesPerStep();
    for (const k of ["all-reduce", "all-gather"] as const)
      lines.push(`  ${k} per step: ${per[k].count} (${per[k].bytes} bytes)`);
    for (const c of this.collectives)
      lines.push(
        `    #${c.index} after segment ${c.segment}: ${c.kind}${c.axis === null ? "" : ` on axis ${c.axis}`} of ` +
          `${c.dtype}[${c.shape.join(", ")}] (${c.bytes} B), ${c.kind === "all-reduce" ? "partial sums" : "pieces"} from ${c.name}`,
      );
    return lines.join("\n");
  }
}

function mib(b: number): string {
  return `${(b / 1048576).toFixed(2)} MiB`;
}

/**
 * Shards a primitive graph for tensor parallelism (decision 2500): Megatron-style splits of the weights the rule
 * table names, the layouts carried through every op, all-reduces where partial sums meet anything non-linear, and
 * per-rank segment graphs cut at each collective. A dimension that does not divide is a `tp-indivisible` PlanError
 * naming the tensor or value and the numbers.
 */
export function shardGraph(graph: Graph, options: ShardOptions): ShardedProgram {
  return new ShardedProgram(graph, shardLogical(graph, options));
}

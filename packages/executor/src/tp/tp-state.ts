// The StateSet of a tensor-parallel program: each rank's segment StateSets (a rank holds its piece of every split
// State: KV heads), read and written from the host as whole tensors (gathered or sliced on the split axis).
import type { OutputData, StagedProgram, StateSet } from "../contract.js";
import { ExecutorError } from "../errors.js";
import type { ProgramSchema } from "../schema.js";
import { allGather, slicePiece } from "./host-collectives.js";

/** Per-rank StateSets of a tensor-parallel program, one per segment that holds State. */
export class TensorParallelStateSet implements StateSet {
  /** `parts[rank]`: the segment StateSets of that rank, in segment order. */
  readonly parts: readonly (readonly StateSet[])[];
  private readonly where = new Map<string, number>();

  /** @internal Made by a tensor-parallel program's `createState`. */
  constructor(
    readonly schema: ProgramSchema,
    progs: readonly (readonly StagedProgram[])[],
    private readonly axes: ReadonlyMap<string, number | null>,
  ) {
    this.parts = progs.map((segs) => segs.filter((p) => p.schema.states.size > 0).map((p) => p.createState()));
    this.parts[0]!.forEach((set, i) => {
      for (const key of set.schema.states.keys()) this.where.set(key, i);
    });
  }

  get lanes(): number {
    return this.parts[0]![0]?.lanes ?? 1;
  }

  get bytes(): number {
    return this.parts.reduce((a, sets) => a + sets.reduce((b, s) => b + s.bytes, 0), 0);
  }

  /** The StateSet of `rank` that holds the states of a segment program (every one of them), or a typed error. */
  partFor(rank: number, prog: StagedProgram): StateSet | undefined {
    const keys = [...prog.schema.states.keys()];
    if (keys.length === 0) return undefined;
    const i = this.where.get(keys[0]!);
    const set = i === undefined ? undefined : this.parts[rank]![i];
    if (set === undefined || keys.some((k) => !set.schema.states.has(k)))
      throw new ExecutorError("state-mismatch", `this StateSet does not hold the states of ${prog.name}`, {
        program: prog.name,
        key: keys[0]!,
      });
    return set;
  }

  private part(rank: number, key: string): StateSet {
    const i = this.where.get(key);
    if (i === undefined) throw new ExecutorError("unknown-state", `no state "${key}"`, { key });
    return this.parts[rank]![i]!;
  }

  read(key: string): OutputData {
    const axis = this.axes.get(key) ?? null;
    if (axis === null) return this.part(0, key).read(key);
    const spec = this.schema.states.get(key)!;
    return allGather(
      this.parts.map((_, r) => this.part(r, key).read(key)),
      spec.shape,
      axis,
    );
  }

  write(key: string, data: ArrayLike<number>): void {
    const axis = this.axes.get(key) ?? null;
    const spec = this.schema.states.get(key);
    if (spec === undefined) throw new ExecutorError("unknown-state", `no state "${key}"`, { key });
    this.parts.forEach((_, r) =>
      this.part(r, key).write(key, axis === null ? data : slicePiece(data, spec.shape, axis, r, this.parts.length)),
    );
  }

  copyLanes(from: StateSet, fromLane: number, toLane: number, count?: number): void {
    if (!(from instanceof TensorParallelStateSet) || from.parts.length !== this.parts.length)
      throw new ExecutorError("state-mismatch", "copyLanes needs a StateSet of the same tensor-parallel group");
    this.parts.forEach((sets, r) => sets.forEach((s, i) => s.copyLanes(from.parts[r]![i]!, fromLane, toLane, count)));
  }

  zero(): void {
    for (const sets of this.parts) for (const s of sets) s.zero();
  }

  dispose(): void {
    for (const sets of this.parts) for (const s of sets) s.dispose();
  }
}

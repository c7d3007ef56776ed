// Cutting the sharded graph into per-rank programs (decision 2500): each collective ends a segment; a rank's
// segment is a plain primitive graph (local shapes, its weights' shard keys) whose outputs feed the collectives
// and later segments' slots. Values computed from slots and weights alone are recomputed rather than carried.
import { isLiteral, type Eqn, type Graph, type Operand, type Params, type Value } from "@poot/graph-ir";
import { invariant, PlanError } from "../errors.js";
import { localShape, type LogicalGraph, type LEqn } from "./logical.js";
import { shardKey } from "./rules.js";

/** Where a segment's cross-segment slot is filled from. */
export type SegmentInput =
  /** A rank's own value from an earlier segment (`output` of segment `segment`). */
  | { readonly key: string; readonly kind: "carry"; readonly segment: number; readonly output: string }
  /** The result of collective `index`. */
  | { readonly key: string; readonly kind: "collective"; readonly index: number };

/** One segment of every rank: its cross-segment inputs (the same on every rank). */
export interface SegmentPlan {
  /** Slots filled by the driver before the segment runs. */
  readonly inputs: readonly SegmentInput[];
}

/** Slot kind of a carried value. */
export const CARRY_SLOT = "Carry";
/** Slot kind of a collective's result. */
export const COLLECTIVE_SLOT = "Collective";

/** The per-rank segment graphs and how segments connect. */
export interface Segmented {
  /** `graphs[rank][segment]`. */
  readonly graphs: readonly (readonly Graph[])[];
  /** The segments' inputs. */
  readonly segments: readonly SegmentPlan[];
  /** For each collective (in order): the segment producing its input and the output name there. */
  readonly sources: readonly { readonly segment: number; readonly output: string }[];
  /** Each graph output: the segment holding it. */
  readonly outputs: ReadonlyMap<string, number>;
}

/** Cuts `lg` into segments for every rank. */
export function segment(lg: LogicalGraph): Segmented {
  const seg: number[] = [];
  const collectiveIndex = new Map<number, number>();
  const defEqn = new Map<number, LEqn>();
  let s = 0;
  const sources: { segment: number; output: string }[] = [];
  for (const e of lg.eqns) {
    defEqn.set(e.out, e);
    if (e.kind === "collective") {
      collectiveIndex.set(e.out, sources.length);
      sources.push({ segment: s, output: `tp.collective.${sources.length}` });
      s++;
    }
    seg[e.out] = s;
  }
  const count = s + 1;
  const pure: boolean[] = lg.values.map((v) => v.storage.kind !== "state" && v.storage.kind !== "device");
  for (const e of lg.eqns)
    pure[e.out] =
      e.kind === "op" ? e.inputs.every((o) => isLiteral(o) || pure[o]!) : e.kind === "local-slice" && pure[e.input]!;
  const inputs: SegmentInput[][] = Array.from({ length: count }, () => []);
  const graphs = Array.from({ length: lg.ranks }, (_, rank) =>
    new RankEmitter(lg, rank, count, seg, defEqn, pure, collectiveIndex, inputs, rank === 0).run(sources),
  );
  const outputs = new Map(lg.outputs.map((o) => [o.name, seg[o.value] ?? count - 1]));
  return { graphs, segments: inputs.map((i) => ({ inputs: i })), sources, outputs };
}

interface Draft {
  values: Value[];
  eqns: Eqn[];
  outputs: { name: string; value: number }[];
  states: { key: string; input: number; output: number }[];
  local: Map<number, number>;
}

class RankEmitter {
  private readonly drafts: Draft[];
  private readonly stateSeg = new Map<number, number>();

  constructor(
    private readonly lg: LogicalGraph,
    private readonly rank: number,
    count: number,
    private readonly seg: readonly number[],
    private readonly defEqn: ReadonlyMap<number, LEqn>,
    private readonly pure: readonly boolean[],
    private readonly collectives: ReadonlyMap<number, number>,
    private readonly inputs: SegmentInput[][],
    private readonly record: boolean,
  ) {
    this.drafts = Array.from({ length: count }, () => ({
      values: [],
      eqns: [],
      outputs: [],
      states: [],
      local: new Map(),
    }));
  }

  run(sources: readonly { segment: number; output: string }[]): Graph[] {
    for (const e of this.lg.eqns) {
      if (e.kind === "collective") {
        const i = this.collectives.get(e.out)!;
        const d = this.drafts[sources[i]!.segment]!;
        d.outputs.push({ name: sources[i]!.output, value: this.ref(sources[i]!.segment, e.input) });
      } else this.emit(this.seg[e.out]!, e);
    }
    for (const st of this.lg.states) {
      const s = this.stateSeg.get(st.input) ?? this.seg[st.output];
      if (s === undefined || (this.seg[st.output] !== undefined && this.seg[st.output] !== s))
        throw new PlanError("tp-unsupported", `state "${st.key}" is read and written on both sides of a collective`, {
          key: st.key,
        });
      const d = this.drafts[s]!;
      d.states.push({ key: st.key, input: this.ref(s, st.input), output: this.ref(s, st.output) });
    }
    for (const o of this.lg.outputs) {
      const s = this.seg[o.value] ?? this.drafts.length - 1;
      this.drafts[s]!.outputs.push({ name: o.name, value: this.ref(s, o.value) });
    }
    return this.drafts.map((d) => ({ values: d.values, eqns: d.eqns, outputs: d.outputs, states: d.states }));
  }

  private addValue(s: number, id: number, v: Omit<Value, "id">): number {
    const d = this.drafts[s]!;
    const local = d.values.length;
    d.values.push({ ...v, id: local } as Value);
    d.local.set(id, local);
    return local;
  }

  /** The local id of logical value `id` in segment `s`, bringing it in (input, recomputation or carry). */
  private ref(s: number, id: number): number {
    const d = this.drafts[s]!;
    const have = d.local.get(id);
    if (have !== undefined) return have;
    const v = this.lg.values[id]!;
    const shape = localShape(v, this.lg.ranks);
    const base = { dtype: v.dtype, shape, ...(v.name === undefined ? {} : { name: v.name }) };
    if (v.storage.kind === "const") {
      const key =
        v.weightOf === undefined || v.sharding.kind !== "split"
          ? v.storage.key
          : shardKey({ key: v.weightOf, axis: v.sharding.axis, rank: this.rank, ranks: this.lg.ranks });
      return this.addValue(s, id, { ...base, storage: { kind: "const", key } });
    }
    if (v.storage.kind === "state") this.stateSeg.set(id, s);
    if (v.storage.kind !== "device") return this.addValue(s, id, { ...base, storage: v.storage });
    const c = this.collectives.get(id);
    if (c !== undefined)
      return this.slot(s, id, `tp.collective.${c}`, COLLECTIVE_SLOT, { kind: "collective", index: c });
    const home = this.seg[id]!;
    invariant(home < s, `value ${id} used in segment ${s} before it is defined (${home})`);
    if (this.pure[id]) {
      this.emit(s, this.defEqn.get(id)!);
      return d.local.get(id)!;
    }
    const name = `tp.carry.${id}`;
    const hd = this.drafts[home]!;
    if (!hd.outputs.some((o) => o.name === name)) hd.outputs.push({ name, value: this.ref(home, id) });
    return this.slot(s, id, name, CARRY_SLOT, { kind: "carry", segment: home, output: name });
  }

  private slot(s: number, id: number, key: string, kind: string, from: object): number {
    const v = this.lg.values[id]!;
    if (this.record) this.inputs[s]!.push({ key, ...from } as SegmentInput);
    return this.addValue(s, id, {
      dtype: v.dtype,
      shape: localShape(v, this.lg.ranks),
      storage: { kind: "slot", key, slot: kind },
    });
  }

  private emit(s: number, e: LEqn): void {
    invariant(e.kind !== "collective", "collectives are not emitted as equations");
    const out = this.lg.values[e.out]!;
    const shape = localShape(out, this.lg.ranks);
    let op: string, inputs: Operand[], params: Params;
    if (e.kind === "local-slice") {
      const full = this.lg.values[e.input]!.shape;
      const piece = full[e.axis]! / this.lg.ranks;
      op = "Slice";
      inputs = [this.ref(s, e.input)];
      params = {
        start: full.map((_, i) => (i === e.axis ? this.rank * piece : 0)),
        end: full.map((d, i) => (i === e.axis ? (this.rank + 1) * piece : d)),
        step: full.map(() => 1),
      };
    } else {
      op = e.op;
      inputs = e.inputs.map((o) => (isLiteral(o) ? o : this.ref(s, o)));
      params = this.localize(e, shape);
    }
    const local = this.addValue(s, e.out, {
      dtype: out.dtype,
      shape,
      storage: { kind: "device" },
      ...(out.name === undefined ? {} : { name: out.name }),
    });
    this.drafts[s]!.eqns.push({ op, inputs, params, out: local });
  }

  /** Params in this rank's shapes (only shape-carrying params change). */
  private localize(e: Extract<LEqn, { kind: "op" }>, shape: number[]): Params {
    switch (e.op) {
      case "Reshape":
      case "Broadcast":
        return { ...e.params, shape };
      case "DynamicSlice":
        return { ...e.params, sizes: shape };
      case "Slice": {
        const x = this.lg.values[e.inputs[0] as number]!;
        if (x.sharding.kind !== "split") return e.params;
        const end = [...(e.params.end as number[])];
        end[x.sharding.axis] = localShape(x, this.lg.ranks)[x.sharding.axis]!;
        return { ...e.params, end };
      }
      default:
        return e.params;
    }
  }
}

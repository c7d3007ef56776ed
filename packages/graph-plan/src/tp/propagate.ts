// The sharding pass (decision 2500): walks a primitive graph once, splitting the rule table's weights and carrying
// each value's layout (whole / split on an axis / partial sums) through every op; where an op cannot take a layout
// it is converted: a whole value is sliced locally, a partial one all-reduced, a split one all-gathered.
import { isLiteral, isPacked, type Graph, type Operand, type Value } from "@poot/graph-ir";
import { PlanError } from "../errors.js";
import type { LEqn, LogicalGraph, LValue, Sharding } from "./logical.js";
import { SHARD_RULES, shardAxis, shardStyle, type ShardRule } from "./rules.js";
import { opRule, type RuleContext } from "./op-rules.js";

/** Options of {@link shardGraph}. */
export interface ShardOptions {
  /** Ranks (tensor-parallel degree), an integer >= 1. */
  readonly ranks: number;
  /** Which weights are split (default {@link SHARD_RULES}). */
  readonly rules?: readonly ShardRule[];
}

const WHOLE: Sharding = { kind: "whole" };

/** Runs the sharding pass: the graph with every value's layout and the slices and collectives it needs. */
export function shardLogical(graph: Graph, options: ShardOptions): LogicalGraph {
  const n = options.ranks;
  if (!(Number.isInteger(n) && n >= 1))
    throw new PlanError("bad-option", `tensor-parallel ranks must be an integer >= 1, got ${n}`, { key: "tp" });
  return new Propagation(graph, n, options.rules ?? SHARD_RULES).run();
}

class Propagation implements RuleContext {
  private readonly values: LValue[] = [];
  private readonly eqns: LEqn[] = [];
  private readonly map: number[] = [];
  private readonly used = new Set<number>();
  private readonly wholeMemo = new Map<number, number>();
  private readonly splitMemo = new Map<string, number>();

  constructor(
    private readonly graph: Graph,
    readonly ranks: number,
    private readonly rules: readonly ShardRule[],
  ) {}

  run(): LogicalGraph {
    for (const v of this.graph.values) if (v.storage.kind !== "device") this.map[v.id] = this.source(v);
    for (const e of this.graph.eqns) {
      // A partial sum already all-reduced is read whole (one collective per value, e.g. Gemma's post-norms).
      const ins = e.inputs.map((o) => (isLiteral(o) ? o : this.reduced(this.map[o]!)));
      const out = this.graph.values[e.out]!;
      const r = opRule(this, e.op, ins, e.params, out.shape);
      for (const o of r.inputs) if (!isLiteral(o)) this.used.add(o);
      const origin = this.origin(e.op, r.inputs);
      const id = this.add({
        dtype: out.dtype,
        shape: out.shape,
        storage: out.storage,
        sharding: r.sharding,
        ...named(out),
        ...(origin === undefined ? {} : { origin }),
      });
      this.eqns.push({ kind: "op", op: e.op, inputs: r.inputs, params: e.params, out: id });
      this.map[e.out] = id;
    }
    const states = this.graph.states.map((s) => {
      const input = this.map[s.input]!;
      let output = this.map[s.output]!;
      const si = this.values[input]!.sharding;
      if (si.kind === "split") output = this.split(output, si.axis);
      else if (!this.used.has(input) && this.values[output]!.sharding.kind === "split") {
        const axis = (this.values[output]!.sharding as { axis: number }).axis;
        this.values[input] = { ...this.values[input]!, sharding: { kind: "split", axis } };
      } else output = this.whole(output);
      return { key: s.key, input, output };
    });
    const outputs = this.graph.outputs.map((o) => ({ name: o.name, value: this.whole(this.map[o.value]!) }));
    return { ranks: this.ranks, values: this.values, eqns: this.eqns, states, outputs };
  }

  /** A graph input: a split weight per the rule table, else whole (State may still be split at first use). */
  private source(v: Value): number {
    const s = v.storage;
    const style = s.kind === "const" && !isPacked(v.dtype) ? shardStyle(s.key, this.rules) : null;
    if (s.kind !== "const" || style === null || this.ranks === 1)
      return this.add({
        dtype: v.dtype,
        shape: v.shape,
        storage: s,
        sharding: WHOLE,
        ...named(v),
        ...(s.kind === "const" ? { origin: s.key } : {}),
      });
    const axis = shardAxis(style, v.shape.length);
    const dim = v.shape[axis]!;
    if (dim % this.ranks !== 0)
      throw new PlanError(
        "tp-indivisible",
        `tensor "${s.key}" [${v.shape.join(", ")}]: axis ${axis} (${dim}) does not split into ${this.ranks} shards`,
        { value: v.id, key: s.key },
      );
    return this.add({
      dtype: v.dtype,
      shape: v.shape,
      storage: s,
      sharding: { kind: "split", axis },
      weightOf: s.key,
      origin: s.key,
    });
  }

  /** A partial sum's all-reduced value when it already has one, else the value itself. */
  private reduced(id: number): number {
    return this.values[id]!.sharding.kind === "partial" ? (this.wholeMemo.get(id) ?? id) : id;
  }

  /** The weight a result comes from: a MatMul's right operand's, else the first non-whole input's. */
  private origin(op: string, ins: readonly Operand[]): string | undefined {
    const vs = ins.filter((o): o is number => !isLiteral(o)).map((o) => this.values[o]!);
    const pick = op === "MatMul" ? vs[vs.length - 1] : (vs.find((v) => v.sharding.kind !== "whole") ?? vs[0]);
    return pick?.origin;
  }

  private add(v: LValue): number {
    this.values.push(v);
    return this.values.length - 1;
  }

  value(id: number): LValue {
    return this.values[id]!;
  }

  /** The whole value: partial sums all-reduced, pieces all-gathered. */
  whole(id: number): number {
    const v = this.values[id]!;
    if (v.sharding.kind === "whole") return id;
    const memo = this.wholeMemo.get(id);
    if (memo !== undefined) return memo;
    if (v.storage.kind === "const") {
      // A split weight read whole elsewhere (a tied embedding) is the whole tensor, not a gather.
      const whole = this.add({
        dtype: v.dtype,
        shape: v.shape,
        storage: v.storage,
        sharding: WHOLE,
        origin: v.storage.key,
      });
      this.wholeMemo.set(id, whole);
      return whole;
    }
    const out = this.add({ ...device(v), sharding: WHOLE, ...suffix(v, "whole") });
    const split = v.sharding.kind === "split";
    this.used.add(id);
    this.eqns.push({
      kind: "collective",
      collective: split ? "all-gather" : "all-reduce",
      input: id,
      axis: v.sharding.kind === "split" ? v.sharding.axis : null,
      out,
    });
    this.wholeMemo.set(id, out);
    return out;
  }

  /** The value split on `axis`: a State not yet read is split in place, a weight read as its shards, else sliced. */
  split(id: number, axis: number): number {
    const v = this.values[id]!;
    if (v.sharding.kind === "split" && v.sharding.axis === axis) return id;
    const dim = v.shape[axis]!;
    if (dim % this.ranks !== 0)
      throw new PlanError(
        "tp-indivisible",
        `${v.name ?? `value %${id}`} [${v.shape.join(", ")}]: axis ${axis} (${dim}) does not split into ${this.ranks} shards`,
        { value: id },
      );
    if (v.sharding.kind !== "whole") return this.split(this.whole(id), axis);
    if (v.storage.kind === "state" && !this.used.has(id)) {
      this.values[id] = { ...v, sharding: { kind: "split", axis } };
      return id;
    }
    const key = `${id}:${axis}`;
    const memo = this.splitMemo.get(key);
    if (memo !== undefined) return memo;
    let out: number;
    if (v.storage.kind === "const" && !isPacked(v.dtype)) {
      out = this.add({ ...v, sharding: { kind: "split", axis }, weightOf: v.storage.key });
    } else {
      out = this.add({ ...device(v), sharding: { kind: "split", axis }, ...suffix(v, "local") });
      this.used.add(id);
      this.eqns.push({ kind: "local-slice", input: id, axis, out });
    }
    this.splitMemo.set(key, out);
    return out;
  }

  /** True for an operand that is the scalar 0 (a literal or a computed constant). */
  isZero(o: Operand): boolean {
    if (isLiteral(o)) return o.lit === 0;
    const s = this.values[o]!.storage;
    return s.kind === "computed" && s.data.length === 1 && s.data[0] === 0;
  }
}

function device(v: LValue): Omit<LValue, "sharding"> {
  return {
    dtype: v.dtype,
    shape: v.shape,
    storage: { kind: "device" },
    ...(v.origin === undefined ? {} : { origin: v.origin }),
  };
}

function named(v: { readonly name?: string }): { name?: string } {
  return v.name === undefined ? {} : { name: v.name };
}

function suffix(v: { readonly name?: string }, s: string): { name?: string } {
  return v.name === undefined ? {} : { name: `${v.name}.${s}` };
}

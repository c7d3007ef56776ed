// The mutable graph the pass pipeline edits: value ids stay stable across every pass (so reports can
// name source values); equations are replaced, removed or inserted, and `toGraph` renumbers at the end.

import {
  isLiteral,
  type DType,
  type Eqn,
  type Graph,
  type GraphOutput,
  type IotaParams,
  type Operand,
  type OpTable,
  type Shape,
  type StatePair,
  type Storage,
  type Value,
  type ValueId,
} from "@poot/graph-ir";
import { invariant } from "./errors.js";

/** A graph under rewriting. */
export class Draft {
  /** Values by stable id (new values are appended). */
  readonly values: Value[];
  /** Equations in order; removed ones are null until the next compaction. */
  eqns: (Eqn | null)[];
  /** Graph outputs (values may be forwarded). */
  readonly outputs: GraphOutput[];
  /** State pairs (outputs may be forwarded). */
  readonly states: StatePair[];
  /** Op table for typing rewritten equations. */
  readonly ops: OpTable;
  /** Iota parameters of values that iota folding turned into Computed constants. */
  readonly iotaOf = new Map<ValueId, IotaParams>();
  private pending = new Map<number, Eqn[]>();
  private defAt: Int32Array = new Int32Array(0);
  private readers: number[][] = [];
  private dirty = true;

  /** Starts a draft from a validated graph. */
  constructor(g: Graph, ops: OpTable) {
    this.values = g.values.map((v) => ({ ...v }));
    this.eqns = [...g.eqns];
    this.outputs = g.outputs.map((o) => ({ ...o }));
    this.states = g.states.map((s) => ({ ...s }));
    this.ops = ops;
  }

  private index(): void {
    if (!this.dirty) return;
    this.defAt = new Int32Array(this.values.length).fill(-1);
    this.readers = this.values.map(() => []);
    this.eqns.forEach((e, k) => {
      if (e === null) return;
      this.defAt[e.out] = k;
      for (const o of e.inputs) if (!isLiteral(o)) this.readers[o]!.push(k);
    });
    // Queued insertions read through their anchor, so dead-equation removal in the same sweep keeps their inputs.
    for (const [k, list] of this.pending)
      for (const e of list) for (const o of e.inputs) if (!isLiteral(o)) this.readers[o]!.push(k);
    this.dirty = false;
  }

  /** The equation defining `v` (undefined for inputs and removed definitions). */
  def(v: ValueId): Eqn | undefined {
    this.index();
    const k = this.defAt[v] ?? -1;
    return k < 0 ? undefined : (this.eqns[k] ?? undefined);
  }

  /** Index of the equation defining `v`, or -1. */
  defIndex(v: ValueId): number {
    this.index();
    return this.defAt[v] ?? -1;
  }

  /** Indices of the equations reading `v` (once per equation). */
  users(v: ValueId): number[] {
    this.index();
    return [...new Set(this.readers[v] ?? [])];
  }

  /** True when `v` is a graph output or a state_out. */
  isExternal(v: ValueId): boolean {
    return this.outputs.some((o) => o.value === v) || this.states.some((s) => s.output === v);
  }

  /** Readers of `v` plus one if it is external: 0 means dead. */
  useCount(v: ValueId): number {
    return this.users(v).length + (this.isExternal(v) ? 1 : 0);
  }

  /** The storage kind of a value. */
  storageOf(v: ValueId): Storage["kind"] {
    return this.values[v]!.storage.kind;
  }

  /** Replaces equation k (its `out` must stay the same value). */
  replace(k: number, e: Eqn): void {
    const old = this.eqns[k];
    invariant(old !== null && old !== undefined && old.out === e.out, "a replacement defines the same value");
    // Keep the reader index current instead of rebuilding it: rewrites happen thousands of times per compile.
    this.unlink(k, old);
    this.eqns[k] = e;
    if (!this.dirty) for (const o of e.inputs) if (!isLiteral(o)) this.readers[o]!.push(k);
  }

  /** Removes equation k. */
  remove(k: number): void {
    const old = this.eqns[k];
    if (old === null || old === undefined) return;
    this.unlink(k, old);
    if (!this.dirty) this.defAt[old.out] = -1;
    this.eqns[k] = null;
  }

  private unlink(k: number, e: Eqn): void {
    if (this.dirty) return;
    for (const o of e.inputs) {
      if (isLiteral(o)) continue;
      const r = this.readers[o]!;
      const i = r.indexOf(k);
      if (i >= 0) r.splice(i, 1);
    }
  }

  /** Queues `e` to be placed just before equation k at the next compaction. */
  insertBefore(k: number, e: Eqn): void {
    const list = this.pending.get(k) ?? [];
    list.push(e);
    this.pending.set(k, list);
    if (!this.dirty) for (const o of e.inputs) if (!isLiteral(o)) this.readers[o]!.push(k);
  }

  /** Makes every reader (and output/state) of `from` read `to` instead. */
  forward(from: ValueId, to: ValueId): void {
    this.index();
    // Only the readers of `from` change; the index moves them to `to` instead of being rebuilt.
    const rs = this.readers[from]!;
    for (const k of new Set(rs)) {
      const e = this.eqns[k];
      if (e === null || e === undefined) continue;
      const inputs = e.inputs.map((o): Operand => (o === from ? to : o));
      this.eqns[k] = { ...e, inputs };
      for (const o of inputs) if (o === to) this.readers[to]!.push(k);
    }
    this.readers[from] = [];
    for (const o of this.outputs) if (o.value === from) (o as { value: number }).value = to;
    for (const s of this.states) if (s.output === from) (s as { output: number }).output = to;
  }

  /** Adds a value (Device values need an equation defining them). */
  addValue(dtype: DType, shape: Shape, storage: Storage, name?: string): ValueId {
    const id = this.values.length;
    this.values.push(
      name === undefined ? { id, dtype, shape: [...shape], storage } : { id, dtype, shape: [...shape], storage, name },
    );
    // A new value has no readers and no definition yet: extend the index instead of rebuilding it.
    if (!this.dirty) {
      this.readers.push([]);
      const defAt = new Int32Array(this.values.length).fill(-1);
      defAt.set(this.defAt.subarray(0, id));
      this.defAt = defAt;
    }
    return id;
  }

  /** Replaces a value's storage (iota and constant folding turn Device values into Computed ones). */
  setStorage(v: ValueId, storage: Storage): void {
    this.values[v] = { ...this.values[v]!, storage };
  }

  /** Places queued insertions and drops removed equations. */
  compact(): void {
    const out: Eqn[] = [];
    this.eqns.forEach((e, k) => {
      for (const p of this.pending.get(k) ?? []) out.push(p);
      if (e !== null) out.push(e);
    });
    this.pending.clear();
    this.eqns = out;
    this.dirty = true;
  }

  /** Live equation count. */
  eqnCount(): number {
    return this.eqns.filter((e) => e !== null).length + [...this.pending.values()].reduce((a, l) => a + l.length, 0);
  }

  /** A dense graph: values renumbered in first-use order; unreferenced Device/Computed values dropped. */
  toGraph(): { graph: Graph; valueMap: Map<ValueId, ValueId> } {
    this.compact();
    const keep = new Set<ValueId>();
    for (const e of this.eqns) {
      keep.add(e!.out);
      for (const o of e!.inputs) if (!isLiteral(o)) keep.add(o);
    }
    for (const o of this.outputs) keep.add(o.value);
    for (const s of this.states) {
      keep.add(s.input);
      keep.add(s.output);
    }
    // Consts, slots and states stay even when unread: they are the program's binding schema.
    for (const v of this.values)
      if (v.storage.kind === "const" || v.storage.kind === "slot" || v.storage.kind === "state") keep.add(v.id);
    const map = new Map<ValueId, ValueId>();
    const values: Value[] = [];
    for (const v of this.values) {
      if (!keep.has(v.id)) continue;
      map.set(v.id, values.length);
      values.push({ ...v, id: values.length });
    }
    const m = (o: Operand): Operand => (isLiteral(o) ? o : map.get(o)!);
    const eqns = this.eqns.map((e) => ({ ...e!, inputs: e!.inputs.map(m), out: map.get(e!.out)! }));
    const outputs = this.outputs.map((o) => ({ name: o.name, value: map.get(o.value)! }));
    const states = this.states.map((s) => ({ key: s.key, input: map.get(s.input)!, output: map.get(s.output)! }));
    return { graph: { values, eqns, outputs, states }, valueMap: map };
  }
}

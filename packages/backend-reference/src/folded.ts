// A pre-built host schedule for the eval executor: equations that read only weights and compiler constants
// (dtype casts, weight transposes, packed decodes) run once and are kept; each step runs the rest with
// the same op semantics and rounding as graph-ir's `evaluate`, so results are bit-identical to it.
import { ExecutorError } from "@poot/executor";
import { invariant } from "./errors.js";
import {
  isLiteral,
  isPacked,
  opContext,
  PRIMITIVE_OPS,
  roundInPlace,
  tensorFromHost,
  type Graph,
  type HostData,
  type OpContext,
  type OpTable,
  type Tensor,
  type ValueType,
} from "@poot/graph-ir";
import { FastMatMul } from "./fast-matmul.js";
import { FastBroadcast, FastTranspose } from "./fast-movement.js";

/** Per-step data of a {@link FoldedSchedule} run. */
export interface FoldedBindings {
  /** Weight source (read once per Const, only while folding). */
  readonly consts: (key: string, type: ValueType) => HostData;
  /** Slot data by key. */
  readonly slots: { readonly [key: string]: HostData };
  /** state_in data by key. */
  readonly state: { readonly [key: string]: HostData };
  /** state_in already as evaluator tensors (values rounded to the state's dtype), used as they are. */
  readonly stateTensors?: ReadonlyMap<string, Tensor>;
}

/**
 * Folded values shared by every program of one executor, keyed by the structure of their defining
 * expression (the op chain from Const keys and Computed data), so prefill and decode fold each weight once.
 */
export class FoldCache {
  /** Tensors by structural key. */
  readonly tensors = new Map<string, Tensor>();
  private readonly intern = new Map<string, number>();

  /** A short id for a structural key string (keys of deep chains stay short). */
  id(key: string): string {
    let n = this.intern.get(key);
    if (n === undefined) {
      n = this.intern.size;
      this.intern.set(key, n);
    }
    return `#${n}`;
  }

  /** Bytes held (float64 per element, as the evaluator stores values). */
  get bytes(): number {
    let n = 0;
    for (const t of this.tensors.values()) n += t.data.byteLength;
    return n;
  }

  /** Forgets everything (after new weights are bound). */
  clear(): void {
    this.tensors.clear();
    this.intern.clear();
  }
}

/** FNV-1a over the bytes of a typed array: identifies Computed data in structural keys. */
function fnv(
  data: ArrayLike<number> & {
    readonly buffer: ArrayBufferLike;
    readonly byteOffset: number;
    readonly byteLength: number;
  },
): string {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193) >>> 0;
  return `${h.toString(16)}:${bytes.length}`;
}

/** The dynamic equations of a graph with its weight-only prefix folded once. */
export class FoldedSchedule {
  /** Equation indices that depend on a Slot or State, in order. */
  private readonly dynamic: number[] = [];
  /** Equation indices that read only Const/Computed values, in order. */
  private readonly static: number[] = [];
  /** Static values read by dynamic equations or outputs: kept after folding. */
  private readonly boundary = new Set<number>();
  private frozen: Map<number, Tensor> | null = null;
  /** Structural keys of static values (filled when folding). */
  private keys: string[] = [];
  /** Last dynamic use of each value, so intermediates are dropped early. */
  private readonly lastUse: Int32Array;
  private readonly contexts: OpContext[];
  /** Values returned as outputs or state_out: never dropped early. */
  private readonly keep: Set<number>;

  /** @param graph - a validated graph; @param program - its name, for messages; @param cache - folded values shared across programs; @param ops - the op table (default: the primitives). */
  private readonly ops: OpTable;

  constructor(
    private readonly graph: Graph,
    private readonly program: string,
    private readonly cache: FoldCache,
    ops?: OpTable,
  ) {
    // Bit-identical faster primitives replace the reference ones in whatever table the graph comes with.
    this.ops = { ...(ops ?? PRIMITIVE_OPS), MatMul: FastMatMul, Transpose: FastTranspose, Broadcast: FastBroadcast };
    const isStatic = new Uint8Array(graph.values.length);
    for (const v of graph.values) if (v.storage.kind === "const" || v.storage.kind === "computed") isStatic[v.id] = 1;
    graph.eqns.forEach((e, k) => {
      const ins = e.inputs.filter((o): o is number => !isLiteral(o));
      if (ins.every((o) => isStatic[o] === 1)) {
        isStatic[e.out] = 1;
        this.static.push(k);
      } else {
        this.dynamic.push(k);
        for (const o of ins) if (isStatic[o] === 1) this.boundary.add(o);
      }
    });
    for (const o of graph.outputs) if (isStatic[o.value] === 1) this.boundary.add(o.value);
    for (const s of graph.states) if (isStatic[s.output] === 1) this.boundary.add(s.output);
    this.keep = new Set([...graph.outputs.map((o) => o.value), ...graph.states.map((st) => st.output)]);
    this.lastUse = new Int32Array(graph.values.length).fill(-1);
    for (const k of this.dynamic) for (const o of graph.eqns[k]!.inputs) if (!isLiteral(o)) this.lastUse[o] = k;
    this.contexts = graph.eqns.map((e, k) =>
      opContext(e.op, [...e.inputs.filter((o): o is number => !isLiteral(o)), e.out], k),
    );
  }

  /** Forgets folded values (after new weights are bound). */
  reset(): void {
    this.frozen = null;
  }

  /** Fills `keys` for static values: Const by key, Computed by content, equations by op, params and inputs. */
  private structuralKeys(): void {
    const g = this.graph;
    const keys = new Array<string>(g.values.length).fill("");
    for (const v of g.values) {
      const s = v.storage;
      if (s.kind === "const") keys[v.id] = this.cache.id(`c:${s.key}`);
      else if (s.kind === "computed")
        keys[v.id] = this.cache.id(`k:${JSON.stringify(v.dtype)}:${v.shape.join(",")}:${fnv(s.data)}`);
    }
    for (const k of this.static) {
      const e = g.eqns[k]!;
      const ins = e.inputs.map((o) => (isLiteral(o) ? `${o.dtype}=${o.lit}` : keys[o]!));
      keys[e.out] = this.cache.id(
        `${e.op}${JSON.stringify(e.params)}(${ins.join(",")})->${JSON.stringify(g.values[e.out]!.dtype)}`,
      );
    }
    this.keys = keys;
  }

  /** Runs one step; returns outputs and state_out as evaluator tensors. */
  run(b: FoldedBindings): { outputs: Map<string, Tensor>; state: Map<string, Tensor> } {
    return this.execute(b, false)!;
  }

  /** Folds the weight-only equations now (a no-op once folded), so the first step pays nothing extra. */
  fold(consts: FoldedBindings["consts"]): void {
    this.execute({ consts, slots: {}, state: {} }, true);
  }

  private execute(
    b: FoldedBindings,
    foldOnly: boolean,
  ): { outputs: Map<string, Tensor>; state: Map<string, Tensor> } | null {
    const g = this.graph;
    const env = new Array<Tensor | undefined>(g.values.length);
    const bind = (id: number, host: HostData | undefined, what: string, key: string): Tensor => {
      const v = g.values[id]!;
      if (host === undefined)
        throw new ExecutorError("slot-unwritten", `no data for ${what}`, { program: this.program, key });
      const t = tensorFromHost(v.dtype, v.shape, host);
      if (t === null)
        throw new ExecutorError("weight-mismatch", `${what} data of ${host.length} elements does not fit its type`, {
          program: this.program,
          key,
          actual: host.length,
        });
      return t;
    };
    const get = (id: number): Tensor => {
      const t = env[id];
      if (t !== undefined) return t;
      const s = g.values[id]!.storage;
      let out: Tensor;
      switch (s.kind) {
        case "const":
          out = bind(id, b.consts(s.key, g.values[id]!), "weight", s.key);
          break;
        case "computed":
          out = bind(id, s.data, "computed value", String(id));
          break;
        case "slot":
          out = bind(id, b.slots[s.key], "slot", s.key);
          break;
        case "state":
          out = b.stateTensors?.get(s.key) ?? bind(id, b.state[s.key], "state", s.key);
          break;
        case "device":
          invariant(false, `value ${id} read before its equation ran`);
          break;
        default:
          return s satisfies never;
      }
      env[id] = out;
      return out;
    };
    const exec = (k: number): void => {
      const e = g.eqns[k]!;
      const inputs = e.inputs.map((o): Tensor => {
        if (!isLiteral(o)) return get(o);
        const t = tensorFromHost(o.dtype, [], [o.lit]);
        invariant(t !== null, "literal typed by validation");
        return t;
      });
      const out = g.values[e.out]!;
      let data = this.ops[e.op]!.evaluate(inputs, e.params, out, this.contexts[k]!);
      if (!isPacked(out.dtype)) {
        const view = data === inputs[0]?.data;
        // As in evaluate: a view handing back its input's array is copied before a rounding that could change it;
        // a view of the same dtype skips the pass, its input already holds values rounded to that dtype.
        if (view && inputs[0]!.dtype !== out.dtype) data = data.slice();
        if (!view || inputs[0]!.dtype !== out.dtype) roundInPlace(out.dtype, data);
      }
      env[e.out] = { dtype: out.dtype, shape: out.shape, data };
    };
    if (this.frozen === null) {
      this.structuralKeys();
      for (const k of this.static) {
        const out = g.eqns[k]!.out;
        const hit = this.cache.tensors.get(this.keys[out]!);
        if (hit !== undefined) env[out] = hit;
        else {
          exec(k);
          if (this.boundary.has(out)) this.cache.tensors.set(this.keys[out]!, env[out]!);
        }
      }
      const frozen = new Map<number, Tensor>();
      for (const id of this.boundary) frozen.set(id, get(id));
      this.frozen = frozen;
      env.fill(undefined);
    }
    if (foldOnly) return null;
    for (const [id, t] of this.frozen) env[id] = t;
    for (const k of this.dynamic) {
      exec(k);
      for (const o of g.eqns[k]!.inputs)
        if (!isLiteral(o) && this.lastUse[o] === k && !this.boundary.has(o) && !this.keep.has(o)) env[o] = undefined;
    }
    const outputs = new Map<string, Tensor>();
    // Outputs and states share arrays with folded values only if a graph returns a weight; never mutated.
    for (const o of g.outputs) outputs.set(o.name, get(o.value));
    const state = new Map<string, Tensor>();
    for (const s of g.states) state.set(s.key, get(s.output));
    return { outputs, state };
  }
}

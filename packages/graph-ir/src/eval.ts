// The reference evaluator: runs a graph equation by equation in float64, rounding each produced value
// to its storage dtype. It is the oracle every compiled or fused path is checked against.

import { dtypeName, isPacked } from "./dtype.js";
import { GraphError } from "./errors.js";
import { isLiteral, type Graph, type Value, type ValueType } from "./graph.js";
import { opContext, type OpTable } from "./ops/opdef.js";
import { PRIMITIVE_OPS } from "./ops/table.js";
import { numel } from "./shape.js";
import { roundInPlace, tensorFromHost, tensorFromStored, type HostData, type Tensor } from "./tensor.js";
import { validateGraph } from "./validate.js";

/** A lazy weight source: called once per Const value that an evaluation reads. */
export type ConstSource = (key: string, type: ValueType) => HostData;

/** Data bound by the caller. Float data is rounded to the value's dtype; f16/bf16 accept Uint16Array bits. */
export interface EvalBindings {
  /** Weights: a record or a lazy source. */
  readonly consts?: ConstSource | { readonly [key: string]: HostData };
  /** Per-step slot data by slot key. */
  readonly slots?: { readonly [key: string]: HostData };
  /** State contents (state_in) by state key. */
  readonly state?: { readonly [key: string]: HostData };
}

/** Evaluator options. */
export interface EvalOptions {
  /** Op table (default primitives); composite ops come in via `extendOps`. */
  readonly ops?: OpTable;
  /** Validate the graph first (default true). */
  readonly validate?: boolean;
}

/** Evaluation result: named outputs and the new state (state_out) by key. */
export interface EvalResult {
  /** Graph outputs by name. */
  readonly outputs: { readonly [name: string]: Tensor };
  /** state_out by state key. */
  readonly state: { readonly [key: string]: Tensor };
}

function bind(
  v: Value,
  host: HostData | undefined,
  code: "unbound-const" | "unbound-slot" | "unbound-state",
  key: string,
): Tensor {
  if (host === undefined)
    throw new GraphError(code, `no data bound for ${v.storage.kind} value`, { key, values: [v.id] });
  const t = tensorFromHost(v.dtype, v.shape, host);
  if (t === null) {
    const want = isPacked(v.dtype) ? `a Uint8Array of the packed byte size` : `${numel(v.shape)} elements`;
    throw new GraphError(
      "binding-mismatch",
      `bound ${host.length} elements for ${dtypeName(v.dtype)}[${v.shape.join(",")}]; expected ${want}`,
      { key, values: [v.id] },
    );
  }
  return t;
}

function source(g: Graph, v: Value, b: EvalBindings): Tensor {
  const s = v.storage;
  switch (s.kind) {
    case "const": {
      const c = b.consts;
      const host = typeof c === "function" ? c(s.key, v) : c?.[s.key];
      return bind(v, host, "unbound-const", s.key);
    }
    case "slot":
      return bind(v, b.slots?.[s.key], "unbound-slot", s.key);
    case "state":
      return bind(v, b.state?.[s.key], "unbound-state", s.key);
    case "computed":
      return tensorFromStored(v.dtype, v.shape, s.data);
    case "device":
      throw new GraphError("order-violation", "device value read before definition", { values: [v.id] });
    default:
      return s satisfies never;
  }
}

/** Evaluates `graph` with the given bindings; only values that equations or outputs read are bound. */
export function evaluate(graph: Graph, bindings: EvalBindings = {}, options: EvalOptions = {}): EvalResult {
  const ops: OpTable = options.ops ?? PRIMITIVE_OPS;
  if (options.validate !== false) validateGraph(graph, { ops });
  const env = new Array<Tensor | undefined>(graph.values.length);
  // Last use per value so intermediates can be dropped as soon as they are dead.
  const lastUse = new Int32Array(graph.values.length).fill(-1);
  graph.eqns.forEach((e, k) =>
    e.inputs.forEach((o) => {
      if (!isLiteral(o)) lastUse[o] = k;
    }),
  );
  const keep = new Set<number>([...graph.outputs.map((o) => o.value), ...graph.states.map((s) => s.output)]);
  const get = (id: number): Tensor => {
    let t = env[id];
    if (t === undefined) {
      t = source(graph, graph.values[id]!, bindings);
      env[id] = t;
    }
    return t;
  };
  graph.eqns.forEach((e, k) => {
    const def = ops[e.op]!;
    const inputs = e.inputs.map((o): Tensor => {
      if (!isLiteral(o)) return get(o);
      const data = tensorFromHost(o.dtype, [], [o.lit]);
      if (data === null) throw new GraphError("binding-mismatch", "bad literal", { eqn: k, op: e.op });
      return data;
    });
    const out = graph.values[e.out]!;
    const ctx = opContext(e.op, [...e.inputs.filter((o): o is number => !isLiteral(o)), e.out], k);
    let data = def.evaluate(inputs, e.params, out, ctx);
    if (!isPacked(out.dtype)) {
      // Views may hand back their input's array; copy before rounding only when the dtype could change it.
      if (data === inputs[0]?.data && inputs[0].dtype !== out.dtype) data = data.slice();
      roundInPlace(out.dtype, data);
    }
    env[e.out] = { dtype: out.dtype, shape: out.shape, data };
    for (const o of e.inputs) if (!isLiteral(o) && lastUse[o] === k && !keep.has(o)) env[o] = undefined;
  });
  const outputs: Record<string, Tensor> = {};
  for (const o of graph.outputs) outputs[o.name] = get(o.value);
  const state: Record<string, Tensor> = {};
  for (const s of graph.states) state[s.key] = get(s.output);
  return { outputs, state };
}

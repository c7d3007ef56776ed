// The tracing core: creates Const/Slot/State/Computed values and emits primitive equations,
// inferring shape and dtype at trace time so bad shapes fail where the tracer wrote them.

import { isPacked, type DType, type ScalarDType } from "./dtype.js";
import { GraphError } from "./errors.js";
import type {
  Eqn,
  Graph,
  GraphOutput,
  Literal,
  Operand,
  Params,
  SlotKind,
  StatePair,
  Storage,
  StoredData,
  Value,
  ValueId,
} from "./graph.js";
import { opContext, type OpTable } from "./ops/opdef.js";
import type { ReduceKind } from "./ops/reduce.js";
import { PRIMITIVE_OPS } from "./ops/table.js";
import { isValidShape, type Shape } from "./shape.js";
import { validateGraph } from "./validate.js";

/** A traced value handle. */
export interface Ref {
  /** Value id. */
  readonly id: ValueId;
  /** Element type. */
  readonly dtype: DType;
  /** Static shape. */
  readonly shape: Shape;
}

/** A builder operand: a traced value, an explicit literal, or a JS number (a literal of the first value operand's dtype). */
export type In = Ref | Literal | number;

/** Builder options. */
export interface BuilderOptions {
  /** Op table for `emit` (default primitives). */
  readonly ops?: OpTable;
}

type MutableValue = { -readonly [K in keyof Value]: Value[K] };

/** Emits primitives with trace-time typing; `Builder` adds the composed helpers. */
export class GraphBuilder {
  /** The op table used for typing. */
  readonly ops: OpTable;
  private readonly values: MutableValue[] = [];
  private readonly eqns: Eqn[] = [];
  private readonly outs: GraphOutput[] = [];
  private readonly pairs: StatePair[] = [];
  private readonly prefixes: string[] = [];

  /** Creates an empty builder. */
  constructor(options: BuilderOptions = {}) {
    this.ops = options.ops ?? PRIMITIVE_OPS;
  }

  private addValue(dtype: DType, shape: Shape, storage: Storage, name?: string): Ref {
    if (!isValidShape(shape)) throw new GraphError("shape-mismatch", `invalid shape ${JSON.stringify(shape)}`);
    const id = this.values.length;
    const v: MutableValue = { id, dtype, shape: [...shape], storage };
    const full = this.fullName(name);
    if (full !== undefined) v.name = full;
    this.values.push(v);
    return v;
  }

  private fullName(name?: string): string | undefined {
    if (name === undefined) return undefined;
    return [...this.prefixes, name].join(".");
  }

  /** Runs `fn` with `prefix` prepended to debug names (`layers.0` + `attn.q`). */
  scope<T>(prefix: string, fn: () => T): T {
    this.prefixes.push(prefix);
    try {
      return fn();
    } finally {
      this.prefixes.pop();
    }
  }

  /** Sets the debug name of a value (scoped); returns it for chaining. */
  name<R extends Ref>(ref: R, name: string): R {
    const full = this.fullName(name);
    if (full !== undefined) this.values[ref.id]!.name = full;
    return ref;
  }

  /** A named weight (Const) whose data is bound at eval time. */
  const(key: string, dtype: DType, shape: Shape, name: string = key): Ref {
    return this.addValue(dtype, shape, { kind: "const", key }, name);
  }

  /** A per-step host-written input. */
  slot(kind: SlotKind, key: string, dtype: ScalarDType, shape: Shape): Ref {
    return this.addValue(dtype, shape, { kind: "slot", key, slot: kind }, key);
  }

  /** A persistent buffer's state_in; pair it with `setState`. */
  state(key: string, dtype: DType, shape: Shape): Ref {
    return this.addValue(dtype, shape, { kind: "state", key }, key);
  }

  /** Names `next` as the state_out of the state value `stateIn`. */
  setState(stateIn: Ref, next: Ref): void {
    const v = this.values[stateIn.id]!;
    if (v.storage.kind !== "state")
      throw new GraphError("state-pairing", "setState needs a state value", { values: [stateIn.id] });
    this.pairs.push({ key: v.storage.key, input: stateIn.id, output: next.id });
  }

  /** A constant with its data in the graph (storage dtype array: f16/bf16 as bits, packed as bytes). */
  computed(dtype: DType, shape: Shape, data: StoredData, name?: string): Ref {
    return this.addValue(dtype, shape, { kind: "computed", data }, name);
  }

  /** A literal scalar operand. */
  lit(value: number, dtype: ScalarDType): Literal {
    return { lit: value, dtype };
  }

  /** Declares a named graph output. */
  output(name: string, ref: Ref): void {
    if (this.outs.some((o) => o.name === name))
      throw new GraphError("storage-violation", "duplicate output name", { key: name });
    this.outs.push({ name, value: ref.id });
  }

  /** Emits `op` with params, typing it now; numbers become literals of the first value operand's dtype. */
  emit(op: string, inputs: readonly In[], params: Params = {}, name?: string): Ref {
    const def = this.ops[op];
    if (def === undefined)
      throw new GraphError("unknown-op", `op "${op}" is not in the op table`, { op, eqn: this.eqns.length });
    const firstRef = inputs.find((x): x is Ref => typeof x === "object" && "id" in x);
    const operands: Operand[] = inputs.map((x) => {
      if (typeof x !== "number") return "id" in x ? x.id : x;
      const d = firstRef?.dtype;
      if (d === undefined || isPacked(d))
        throw new GraphError(
          "dtype-mismatch",
          "a number operand needs a value operand to take its dtype from; use lit()",
          { op, eqn: this.eqns.length },
        );
      return { lit: x, dtype: d };
    });
    const types = operands.map((o) => (typeof o === "number" ? this.values[o]! : { dtype: o.dtype, shape: [] }));
    const ids = operands.filter((o): o is number => typeof o === "number");
    const ctx = opContext(op, ids, this.eqns.length);
    const arity = def.arity;
    if (typeof arity === "number" ? inputs.length !== arity : inputs.length < arity.min)
      ctx.fail("bad-arity", `got ${inputs.length} inputs`);
    const t = def.infer(types, params, ctx);
    const out = this.addValue(t.dtype, t.shape, { kind: "device" }, name);
    this.eqns.push({ op, inputs: operands, params, out: out.id });
    return out;
  }

  // ── primitives ──
  /** x + y. */ add(x: In, y: In, name?: string): Ref {
    return this.emit("Add", [x, y], {}, name);
  }
  /** x - y. */ sub(x: In, y: In, name?: string): Ref {
    return this.emit("Sub", [x, y], {}, name);
  }
  /** x * y. */ mul(x: In, y: In, name?: string): Ref {
    return this.emit("Mul", [x, y], {}, name);
  }
  /** x / y. */ div(x: In, y: In, name?: string): Ref {
    return this.emit("Div", [x, y], {}, name);
  }
  /** max(x, y). */ max(x: In, y: In, name?: string): Ref {
    return this.emit("Max", [x, y], {}, name);
  }
  /** min(x, y). */ min(x: In, y: In, name?: string): Ref {
    return this.emit("Min", [x, y], {}, name);
  }
  /** x ** y. */ pow(x: In, y: In, name?: string): Ref {
    return this.emit("Pow", [x, y], {}, name);
  }
  /** Comparison (-> bool). */
  cmp(op: "Eq" | "Ne" | "Lt" | "Le" | "Gt" | "Ge", x: In, y: In, name?: string): Ref {
    return this.emit(op, [x, y], {}, name);
  }
  /** Bit op on i32/u32/bool. */
  bit(op: "And" | "Or" | "Xor" | "Shl" | "Shr", x: In, y: In, name?: string): Ref {
    return this.emit(op, [x, y], {}, name);
  }
  /** Unary op. */
  unary(
    op: "Neg" | "Exp" | "Log" | "Sqrt" | "Recip" | "Tanh" | "Erf" | "Sin" | "Cos" | "Abs" | "Not",
    x: Ref,
    name?: string,
  ): Ref {
    return this.emit(op, [x], {}, name);
  }
  /** -x. */ neg(x: Ref, name?: string): Ref {
    return this.unary("Neg", x, name);
  }
  /** e^x. */ exp(x: Ref, name?: string): Ref {
    return this.unary("Exp", x, name);
  }
  /** sqrt x. */ sqrt(x: Ref, name?: string): Ref {
    return this.unary("Sqrt", x, name);
  }
  /** 1/x. */ recip(x: Ref, name?: string): Ref {
    return this.unary("Recip", x, name);
  }
  /** tanh x. */ tanh(x: Ref, name?: string): Ref {
    return this.unary("Tanh", x, name);
  }
  /** erf x. */ erf(x: Ref, name?: string): Ref {
    return this.unary("Erf", x, name);
  }
  /** cond ? a : b. */ select(cond: Ref, a: In, b: In, name?: string): Ref {
    // Numbers take their dtype from the value branch, not from the bool condition.
    const ref = [a, b].find((x): x is Ref => typeof x === "object" && "id" in x);
    const conv = (x: In): Ref | Literal => {
      if (typeof x !== "number") return x;
      if (ref === undefined || isPacked(ref.dtype))
        throw new GraphError("dtype-mismatch", "select with number branches needs a value branch; use lit()", {
          op: "Select",
        });
      return this.lit(x, ref.dtype);
    };
    const la = conv(a),
      lb = conv(b);
    return this.emit("Select", [cond, la, lb], {}, name);
  }
  /** Convert to `to`. */ cast(x: Ref, to: ScalarDType, name?: string): Ref {
    return this.emit("Cast", [x], { to }, name);
  }
  /** Reduce over axes. */
  reduce(kind: ReduceKind, x: Ref, axes: readonly number[], keepdim = false, name?: string): Ref {
    return this.emit("Reduce", [x], { kind, axes: [...axes], keepdim }, name);
  }
  /** Sum over axes. */ sum(x: Ref, axes: readonly number[], keepdim = false, name?: string): Ref {
    return this.reduce("sum", x, axes, keepdim, name);
  }
  /** Argmax over one axis (-> i32). */ argmax(x: Ref, axis: number, keepdim = false, name?: string): Ref {
    return this.reduce("argmax", x, [axis], keepdim, name);
  }
  /** Reshape. */ reshape(x: Ref, shape: Shape, name?: string): Ref {
    return this.emit("Reshape", [x], { shape: [...shape] }, name);
  }
  /** Strided slice; `step` defaults to 1s. */
  slice(x: Ref, start: readonly number[], end: readonly number[], step?: readonly number[], name?: string): Ref {
    return this.emit(
      "Slice",
      [x],
      { start: [...start], end: [...end], step: step ? [...step] : start.map(() => 1) },
      name,
    );
  }
  /** Broadcast to shape. */ broadcast(x: Ref, shape: Shape, name?: string): Ref {
    return this.emit("Broadcast", [x], { shape: [...shape] }, name);
  }
  /** Permute axes. */ transpose(x: Ref, perm: readonly number[], name?: string): Ref {
    return this.emit("Transpose", [x], { perm: [...perm] }, name);
  }
  /** Concatenate. */ concat(xs: readonly Ref[], axis: number, name?: string): Ref {
    return this.emit("Concat", xs, { axis }, name);
  }
  /** Gather along axis with i32 indices. */ gather(x: Ref, indices: Ref, axis = 0, name?: string): Ref {
    return this.emit("Gather", [x, indices], { axis }, name);
  }
  /** Window at runtime i32 scalar starts. */
  dynamicSlice(x: Ref, starts: readonly Ref[], sizes: readonly number[], name?: string): Ref {
    return this.emit("DynamicSlice", [x, ...starts], { sizes: [...sizes] }, name);
  }
  /** Write `update` into x at runtime i32 scalar starts. */
  dynamicUpdateSlice(x: Ref, update: Ref, starts: readonly Ref[], name?: string): Ref {
    return this.emit("DynamicUpdateSlice", [x, update, ...starts], {}, name);
  }
  /** Batched matrix product. */ matmul(a: Ref, b: Ref, name?: string): Ref {
    return this.emit("MatMul", [a, b], {}, name);
  }
  /** out[idx] = idx[axis]. */ iota(shape: Shape, axis: number, dtype: ScalarDType = "i32", name?: string): Ref {
    return this.emit("Iota", [], { shape: [...shape], axis, dtype }, name);
  }
  /** Decode packed storage to f32. */ decodePacked(x: Ref, name?: string): Ref {
    return this.emit("DecodePacked", [x], {}, name);
  }

  /** Finishes the graph and validates it. */
  build(): Graph {
    const g: Graph = {
      values: this.values.map((v) => ({ ...v })),
      eqns: [...this.eqns],
      outputs: [...this.outs],
      states: [...this.pairs],
    };
    validateGraph(g, { ops: this.ops });
    return g;
  }
}

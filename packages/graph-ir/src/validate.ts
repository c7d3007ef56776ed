// Graph validation: SSA (one definition per Device value), topological order, storage classes,
// op typing (every equation re-typed against its declared output) and state pairing.

import { dtypeEquals, dtypeName, isPacked, isScalarDType, storageBytes, type DType } from "./dtype.js";
import { GraphError } from "./errors.js";
import { isLiteral, type Graph, type Operand, type ValueType } from "./graph.js";
import { opContext, typeString, type OpTable } from "./ops/opdef.js";
import { PRIMITIVE_OPS } from "./ops/table.js";
import { validatePackedFormat } from "./packed.js";
import { isValidShape, numel, shapeEquals } from "./shape.js";

/** Options shared by validate, eval and analysis. */
export interface OpsOption {
  /** Op table to use (default: the primitives); pass `extendOps({...})` for composite ops. */
  readonly ops?: OpTable;
}

/** The type of an operand, or a GraphError when it names no value. */
export function operandType(g: Graph, o: Operand, eqn?: number): ValueType {
  if (isLiteral(o)) return { dtype: o.dtype, shape: [] };
  const v = g.values[o];
  if (v === undefined)
    throw new GraphError(
      "unknown-value",
      `operand %${o} does not exist`,
      eqn === undefined ? { values: [o] } : { eqn, values: [o] },
    );
  return v;
}

function checkDType(d: DType, id: number): void {
  if (isPacked(d)) {
    validatePackedFormat(d.packed);
    return;
  }
  if (!isScalarDType(d)) throw new GraphError("dtype-mismatch", `unknown dtype ${JSON.stringify(d)}`, { values: [id] });
}

/** The typed-array class holding stored (Computed) data of a dtype: f16/bf16 as bits, packed as bytes. */
export function storedClass(
  d: DType,
): typeof Float32Array | typeof Uint16Array | typeof Int32Array | typeof Uint32Array | typeof Uint8Array {
  if (isPacked(d)) return Uint8Array;
  switch (d) {
    case "f32":
      return Float32Array;
    case "f16":
    case "bf16":
      return Uint16Array;
    case "i32":
      return Int32Array;
    case "u32":
      return Uint32Array;
    case "u8":
    case "bool":
      return Uint8Array;
    default:
      return d satisfies never;
  }
}

/** Throws the first problem found; returns normally for a well-formed graph. */
export function validateGraph(g: Graph, options: OpsOption = {}): void {
  const ops: OpTable = options.ops ?? PRIMITIVE_OPS;
  const keys = { const: new Set<string>(), slot: new Set<string>(), state: new Set<string>() };
  g.values.forEach((v, i) => {
    if (v.id !== i) throw new GraphError("ssa-violation", `value at index ${i} has id ${v.id}`, { values: [i] });
    checkDType(v.dtype, i);
    if (!isValidShape(v.shape))
      throw new GraphError("shape-mismatch", `value has invalid shape ${JSON.stringify(v.shape)}`, { values: [i] });
    if (isPacked(v.dtype) && (v.shape.length === 0 || v.shape[v.shape.length - 1]! % v.dtype.packed.blockSize !== 0)) {
      throw new GraphError(
        "shape-mismatch",
        `packed value's last dim must be a multiple of ${v.dtype.packed.blockSize}`,
        { values: [i] },
      );
    }
    const s = v.storage;
    if (s.kind === "const" || s.kind === "slot" || s.kind === "state") {
      if (keys[s.kind].has(s.key))
        throw new GraphError("storage-violation", `duplicate ${s.kind} key`, { values: [i], key: s.key });
      keys[s.kind].add(s.key);
    } else if (s.kind === "computed") {
      const want = isPacked(v.dtype) ? storageBytes(v.dtype, numel(v.shape)) : numel(v.shape);
      if (s.data.length !== want)
        throw new GraphError("storage-violation", `computed data has ${s.data.length} elements, expected ${want}`, {
          values: [i],
        });
      // f16/bf16 data is raw bits, so a Float32Array there would be silently misread.
      const cls = storedClass(v.dtype);
      if (!(s.data instanceof cls))
        throw new GraphError("storage-violation", `computed ${dtypeName(v.dtype)} data must be a ${cls.name}`, {
          values: [i],
        });
    }
  });
  const definedAt = new Int32Array(g.values.length).fill(-1);
  g.eqns.forEach((e, k) => {
    const def = ops[e.op];
    if (def === undefined)
      throw new GraphError("unknown-op", `op "${e.op}" is not in the op table`, { eqn: k, op: e.op, values: [e.out] });
    const out = g.values[e.out];
    if (out === undefined)
      throw new GraphError("unknown-value", `output %${e.out} does not exist`, { eqn: k, op: e.op, values: [e.out] });
    if (out.storage.kind !== "device")
      throw new GraphError("storage-violation", `equation defines a ${out.storage.kind} value`, {
        eqn: k,
        op: e.op,
        values: [e.out],
      });
    if (definedAt[e.out] !== -1)
      throw new GraphError("ssa-violation", `value %${e.out} is already defined by eqn #${definedAt[e.out]}`, {
        eqn: k,
        op: e.op,
        values: [e.out],
      });
    const types = e.inputs.map((o) => {
      const t = operandType(g, o, k);
      if (!isLiteral(o) && g.values[o]!.storage.kind === "device" && definedAt[o] === -1) {
        throw new GraphError("order-violation", `input %${o} is used before it is defined`, {
          eqn: k,
          op: e.op,
          values: [o, e.out],
        });
      }
      if (isLiteral(o) && !isScalarDType(o.dtype))
        throw new GraphError("dtype-mismatch", `literal has bad dtype ${JSON.stringify(o.dtype)}`, {
          eqn: k,
          op: e.op,
        });
      return t;
    });
    const ids = [...e.inputs.filter((o): o is number => !isLiteral(o)), e.out];
    const ctx = opContext(e.op, ids, k);
    const arity = def.arity;
    if (typeof arity === "number" ? e.inputs.length !== arity : e.inputs.length < arity.min) {
      ctx.fail(
        "bad-arity",
        `expected ${typeof arity === "number" ? arity : `at least ${arity.min}`} inputs, got ${e.inputs.length}`,
      );
    }
    const inferred = def.infer(types, e.params, ctx);
    if (!dtypeEquals(inferred.dtype, out.dtype))
      ctx.fail("dtype-mismatch", `declared ${dtypeName(out.dtype)} but the op gives ${dtypeName(inferred.dtype)}`);
    if (!shapeEquals(inferred.shape, out.shape))
      ctx.fail("shape-mismatch", `declared ${typeString(out)} but the op gives ${typeString(inferred)}`);
    definedAt[e.out] = k;
  });
  g.values.forEach((v, i) => {
    if (v.storage.kind === "device" && definedAt[i] === -1)
      throw new GraphError("ssa-violation", "device value is never defined", { values: [i] });
  });
  const names = new Set<string>();
  for (const o of g.outputs) {
    if (names.has(o.name)) throw new GraphError("storage-violation", "duplicate output name", { key: o.name });
    names.add(o.name);
    if (g.values[o.value] === undefined)
      throw new GraphError("unknown-value", `output names missing value %${o.value}`, {
        key: o.name,
        values: [o.value],
      });
  }
  validateStates(g);
}

function validateStates(g: Graph): void {
  const paired = new Set<number>();
  for (const s of g.states) {
    const input = g.values[s.input],
      output = g.values[s.output];
    if (input === undefined || output === undefined)
      throw new GraphError("unknown-value", "state pair names a missing value", {
        key: s.key,
        values: [s.input, s.output],
      });
    if (input.storage.kind !== "state" || input.storage.key !== s.key)
      throw new GraphError("state-pairing", `state input %${s.input} is not the state value "${s.key}"`, {
        key: s.key,
        values: [s.input],
      });
    if (paired.has(s.input))
      throw new GraphError("state-pairing", "state is paired twice", { key: s.key, values: [s.input] });
    if (!dtypeEquals(input.dtype, output.dtype) || !shapeEquals(input.shape, output.shape)) {
      throw new GraphError(
        "state-pairing",
        `state_out ${typeString(output)} differs from state_in ${typeString(input)}`,
        { key: s.key, values: [s.input, s.output] },
      );
    }
    paired.add(s.input);
  }
  for (const v of g.values) {
    if (v.storage.kind === "state" && !paired.has(v.id))
      throw new GraphError("state-pairing", "state value has no state_out", { key: v.storage.key, values: [v.id] });
  }
}

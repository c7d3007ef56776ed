// The buffer, slot and state schema of a graph that every backend shares: what the host writes per step,
// which State pairs persist, what comes out, and the checks a slot or state write must pass.
import {
  dtypeName,
  isPacked,
  numel,
  storageBytes,
  type ConstSource,
  type DType,
  type Graph,
  type HostData,
  type ScalarDType,
  type SlotKind,
  type ValueType,
} from "@poot/graph-ir";
import { ExecutorError } from "./errors.js";

/** A per-step host input. */
export interface SlotSpec {
  /** Slot key (what `writeSlot` takes). */
  readonly key: string;
  /** Its well-known kind (Token, Pos, ...). */
  readonly slot: SlotKind;
  /** Element dtype. */
  readonly dtype: ScalarDType;
  /** Static shape. */
  readonly shape: readonly number[];
  /** Element count. */
  readonly size: number;
}

/** A persistent buffer (state_in/state_out pair). */
export interface StateSpec {
  /** State key. */
  readonly key: string;
  /** Element dtype. */
  readonly dtype: ScalarDType;
  /** Static shape; its leading dimension is the lane count. */
  readonly shape: readonly number[];
  /** Element count. */
  readonly size: number;
}

/** A named output. */
export interface OutputSpec {
  /** Output name. */
  readonly name: string;
  /** Element dtype. */
  readonly dtype: ScalarDType;
  /** Static shape. */
  readonly shape: readonly number[];
  /** Element count. */
  readonly size: number;
}

/** A weight the graph reads. */
export interface ConstSpec {
  /** Const key (checkpoint tensor name). */
  readonly key: string;
  /** Storage dtype (may be packed). */
  readonly dtype: DType;
  /** Shape. */
  readonly shape: readonly number[];
  /** Stored bytes. */
  readonly bytes: number;
}

/** Slots, states, outputs and weights of a graph. */
export interface ProgramSchema {
  /** Slots by key. */
  readonly slots: ReadonlyMap<string, SlotSpec>;
  /** States by key, in graph order. */
  readonly states: ReadonlyMap<string, StateSpec>;
  /** Outputs by name. */
  readonly outputs: ReadonlyMap<string, OutputSpec>;
  /** Weights by key. */
  readonly consts: ReadonlyMap<string, ConstSpec>;
}

function scalar(dtype: DType, what: string, key: string): ScalarDType {
  if (isPacked(dtype))
    throw new ExecutorError(
      "unsupported-dtype",
      `${what} of packed dtype ${dtypeName(dtype)}: only weights may be packed`,
      { key },
    );
  return dtype;
}

/** Reads the schema of a graph (slots, states, outputs, consts). */
export function schemaOf(graph: Graph): ProgramSchema {
  const slots = new Map<string, SlotSpec>();
  const consts = new Map<string, ConstSpec>();
  for (const v of graph.values) {
    const s = v.storage;
    if (s.kind === "slot")
      slots.set(s.key, {
        key: s.key,
        slot: s.slot,
        dtype: scalar(v.dtype, "slot", s.key),
        shape: v.shape,
        size: numel(v.shape),
      });
    else if (s.kind === "const")
      consts.set(s.key, { key: s.key, dtype: v.dtype, shape: v.shape, bytes: storageBytes(v.dtype, numel(v.shape)) });
  }
  const states = new Map<string, StateSpec>();
  for (const p of graph.states) {
    const v = graph.values[p.input]!;
    states.set(p.key, { key: p.key, dtype: scalar(v.dtype, "state", p.key), shape: v.shape, size: numel(v.shape) });
  }
  const outputs = new Map<string, OutputSpec>();
  for (const o of graph.outputs) {
    const v = graph.values[o.value]!;
    outputs.set(o.name, {
      name: o.name,
      dtype: scalar(v.dtype, "output", o.name),
      shape: v.shape,
      size: numel(v.shape),
    });
  }
  return { slots, states, outputs, consts };
}

/** Checks that `data` fits a slot: element count, and integer values in the dtype's range. */
export function checkSlotData(spec: SlotSpec, data: ArrayLike<number>, program: string): void {
  if (data.length !== spec.size) {
    throw new ExecutorError(
      "slot-mismatch",
      `slot ${dtypeName(spec.dtype)}[${spec.shape.join(",")}] takes ${spec.size} elements, got ${data.length}`,
      { program, key: spec.key, expected: spec.size, actual: data.length },
    );
  }
  const range = INT_RANGE[spec.dtype];
  if (range === undefined) return;
  for (let i = 0; i < data.length; i++) {
    const x = data[i]!;
    if (!Number.isInteger(x) || x < range[0] || x > range[1]) {
      throw new ExecutorError("slot-mismatch", `element ${i} is ${x}, not a ${spec.dtype} value`, {
        program,
        key: spec.key,
        actual: x,
      });
    }
  }
}

/**
 * The spec of slot `key` of `schema`, with `data` checked against it ({@link checkSlotData}): what every
 * `StagedProgram.writeSlot` does before it stores the data. Throws `unknown-slot` naming the program's slots when
 * there is no such slot, `slot-mismatch` when the data does not fit.
 */
export function slotSpecFor(schema: ProgramSchema, key: string, data: ArrayLike<number>, program: string): SlotSpec {
  const spec = schema.slots.get(key);
  if (spec === undefined)
    throw new ExecutorError(
      "unknown-slot",
      `no slot "${key}" (slots: ${[...schema.slots.keys()].join(", ") || "none"})`,
      { program, key },
    );
  checkSlotData(spec, data, program);
  return spec;
}

/** Throws `slot-unwritten` for the first slot of `schema` not in `written`: a step reads every slot. */
export function checkSlotsWritten(schema: ProgramSchema, written: ReadonlySet<string>, program: string): void {
  for (const key of schema.slots.keys())
    if (!written.has(key)) throw new ExecutorError("slot-unwritten", "slot was never written", { program, key });
}

/**
 * Reads one Const from a bound weight source and checks what came back: `unbound-weights` when nothing is bound,
 * `weight-mismatch` unless it holds numel(shape) elements, or, for a packed dtype, its storage bytes as a Uint8Array.
 */
export function readWeight(source: ConstSource | null, key: string, type: ValueType, program: string): HostData {
  if (source === null)
    throw new ExecutorError("unbound-weights", "the program reads weights: call bindWeights first", { program, key });
  const data = source(key, type);
  const packed = isPacked(type.dtype);
  const want = packed ? storageBytes(type.dtype, numel(type.shape)) : numel(type.shape);
  if (data.length !== want || (packed && !(data instanceof Uint8Array))) {
    throw new ExecutorError(
      "weight-mismatch",
      `weight source returned ${data.length} elements, expected ${want}${packed ? " bytes (Uint8Array)" : ""}`,
      { program, key, expected: want, actual: data.length },
    );
  }
  return data;
}

const INT_RANGE: Partial<Record<ScalarDType, readonly [number, number]>> = {
  i32: [-2147483648, 2147483647],
  u32: [0, 4294967295],
  u8: [0, 255],
  bool: [0, 1],
};

/** Bytes of one element of a non-packed dtype. */
export function elementBytes(dtype: ScalarDType): number {
  return storageBytes(dtype, 1);
}

/** Whether two state layouts have the same keys, dtypes and per-lane shapes (lanes may differ). */
export function sameLaneLayout(a: ProgramSchema, b: ProgramSchema): boolean {
  if (a.states.size !== b.states.size) return false;
  for (const [key, s] of a.states) {
    const t = b.states.get(key);
    if (t === undefined || t.dtype !== s.dtype || t.shape.length !== s.shape.length) return false;
    if (s.shape.slice(1).some((d, i) => d !== t.shape[i + 1])) return false;
  }
  return true;
}

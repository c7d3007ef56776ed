// Graph, Eqn and Value: a flat, topologically ordered SSA list of primitive equations.
// Values have one of five storage classes; State values pair a state_in with the value written back.

import type { DType, ScalarDType } from "./dtype.js";
import type { Shape } from "./shape.js";

/** Dense integer id of a value: its index in `graph.values`. */
export type ValueId = number;

/** Element type and static shape of a value. */
export interface ValueType {
  /** Element type. */
  readonly dtype: DType;
  /** Static shape. */
  readonly shape: Shape;
}

/** Well-known per-step slot kinds; other strings are allowed for executor-specific slots. */
export type SlotKind =
  | "Token"
  | "Pos"
  | "SeqLen"
  | "Mask"
  | "SlotMap"
  | "PageTable"
  | "BlockTable"
  | "Logits"
  | (string & {});

/** Raw stored data of a Computed value: the storage dtype's array (f16/bf16 as Uint16Array bits, packed as bytes). */
export type StoredData = Float32Array | Uint16Array | Int32Array | Uint32Array | Uint8Array;

/** Where a value lives and who writes it. */
export type Storage =
  /** An intermediate produced by exactly one equation. */
  | { readonly kind: "device" }
  /** A named weight or table; data is bound at eval/bind time. */
  | { readonly kind: "const"; readonly key: string }
  /** A per-step host-written input. */
  | { readonly kind: "slot"; readonly key: string; readonly slot: SlotKind }
  /** A persistent buffer (state_in); its new contents are named in `graph.states`. */
  | { readonly kind: "state"; readonly key: string }
  /** A compiler-made constant whose data lives in the graph. */
  | { readonly kind: "computed"; readonly data: StoredData };

/** Storage class names. */
export type StorageKind = Storage["kind"];

/** A graph value. */
export interface Value extends ValueType {
  /** Its id (equal to its index). */
  readonly id: ValueId;
  /** Storage class. */
  readonly storage: Storage;
  /** Optional debug name such as `layers.0.attn.q`. */
  readonly name?: string;
}

/** A literal scalar operand. */
export interface Literal {
  /** The scalar value (stored-type rounding applies). */
  readonly lit: number;
  /** Its dtype. */
  readonly dtype: ScalarDType;
}

/** An equation input: a value id or a literal scalar. */
export type Operand = ValueId | Literal;

/** JSON-compatible parameter value. */
export type ParamValue =
  | number
  | string
  | boolean
  | null
  | readonly ParamValue[]
  | { readonly [k: string]: ParamValue };

/** Op parameters: plain JSON data. */
export type Params = { readonly [k: string]: ParamValue };

/** One equation: `out = op[params](inputs)`. */
export interface Eqn {
  /** Op name, a key of the op table. */
  readonly op: string;
  /** Inputs in op order. */
  readonly inputs: readonly Operand[];
  /** Op parameters. */
  readonly params: Params;
  /** The Device value it defines. */
  readonly out: ValueId;
}

/** A persistent buffer: `input` is read at step start, `output` holds what the step writes back (donated). */
export interface StatePair {
  /** State key (also the storage key of `input`). */
  readonly key: string;
  /** The state_in value. */
  readonly input: ValueId;
  /** The value written as state_out. */
  readonly output: ValueId;
}

/** A named graph output. */
export interface GraphOutput {
  /** Output name. */
  readonly name: string;
  /** The value returned. */
  readonly value: ValueId;
}

/** A complete graph. */
export interface Graph {
  /** All values, indexed by id. */
  readonly values: readonly Value[];
  /** Equations in topological order. */
  readonly eqns: readonly Eqn[];
  /** Named outputs. */
  readonly outputs: readonly GraphOutput[];
  /** State pairs. */
  readonly states: readonly StatePair[];
}

/** True for a literal operand. */
export function isLiteral(o: Operand): o is Literal {
  return typeof o === "object";
}

// StateSets in host memory (typed arrays in the state's storage dtype): the eval executor's State, and the
// shared lane-copy and host-transfer logic that host-memory backends (CPU, Wasm) reuse.
import {
  bf16BitsToF32,
  f16BitsToF32,
  f32ToBf16Bits,
  f32ToF16Bits,
  storedClass,
  type ScalarDType,
} from "@poot/graph-ir";
import type { OutputData, StateSet } from "./contract.js";
import { ExecutorError } from "./errors.js";
import { elementBytes, sameLaneLayout, type ProgramSchema, type StateSpec } from "./schema.js";

/** Storage of one host buffer: f32 as Float32Array, f16/bf16 as their bits, integers as their own arrays. */
export type HostBuffer = Float32Array | Uint16Array | Int32Array | Uint32Array | Uint8Array;

/** The typed array a host buffer of `dtype` is (16-bit floats as their bits), over fresh or existing memory. */
export type HostArrayType = {
  new (n: number): HostBuffer;
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): HostBuffer;
};

/** The typed array that holds `dtype`'s storage (f16/bf16 as Uint16Array, bool as Uint8Array). */
export function hostArrayType(dtype: ScalarDType): HostArrayType {
  return storedClass(dtype);
}

/** A zeroed host buffer of `n` elements of `dtype`. */
export function allocHostBuffer(dtype: ScalarDType, n: number): HostBuffer {
  return new (hostArrayType(dtype))(n);
}

/** Writes numbers into a host buffer, rounding floats to the storage dtype (f16/bf16 stored as bits). */
export function storeHost(dtype: ScalarDType, dst: HostBuffer, src: ArrayLike<number>): void {
  switch (dtype) {
    case "f16":
      for (let i = 0; i < src.length; i++) dst[i] = f32ToF16Bits(src[i]!);
      return;
    case "bf16":
      for (let i = 0; i < src.length; i++) dst[i] = f32ToBf16Bits(src[i]!);
      return;
    case "bool":
      for (let i = 0; i < src.length; i++) dst[i] = src[i] !== 0 ? 1 : 0;
      return;
    case "f32":
    case "i32":
    case "u32":
    case "u8":
      // Typed-array stores round (f32) or wrap (integers) exactly as a device store would.
      for (let i = 0; i < src.length; i++) dst[i] = src[i]!;
      return;
    default:
      dtype satisfies never;
  }
}

/** Reads a host buffer as an OutputData: f16/bf16 bits widened to f32. */
export function loadHost(dtype: ScalarDType, src: HostBuffer, into?: OutputData): OutputData {
  const widen = dtype === "f16" ? f16BitsToF32 : dtype === "bf16" ? bf16BitsToF32 : null;
  if (widen === null) {
    const Ctor = src.constructor as new (n: number) => OutputData;
    const out =
      into !== undefined && into.length >= src.length && into.constructor === Ctor ? into : new Ctor(src.length);
    out.set(src as never);
    return out;
  }
  const out = into instanceof Float32Array && into.length >= src.length ? into : new Float32Array(src.length);
  for (let i = 0; i < src.length; i++) out[i] = widen(src[i]!);
  return out;
}

/** The common leading dimension of every state (the lane count); 1 when the states disagree or there are none. */
export function laneCount(schema: ProgramSchema): number {
  const leads = [...schema.states.values()].map((s) => s.shape[0] ?? 1);
  return leads.length > 0 && leads.every((d) => d === leads[0]) ? leads[0]! : 1;
}

/** A StateSet whose buffers are host typed arrays. */
export class HostStateSet implements StateSet {
  /** Buffers by state key. */
  readonly buffers = new Map<string, HostBuffer>();
  readonly lanes: number;
  private disposed = false;

  /** @param schema - the program layout; @param program - its name, for messages; @param onDispose - told when freed. */
  constructor(
    readonly schema: ProgramSchema,
    private readonly program: string,
    private readonly onDispose?: (s: HostStateSet) => void,
  ) {
    this.lanes = laneCount(schema);
    for (const s of schema.states.values()) this.buffers.set(s.key, allocHostBuffer(s.dtype, s.size));
  }

  get bytes(): number {
    let n = 0;
    for (const s of this.schema.states.values()) n += s.size * elementBytes(s.dtype);
    return this.disposed ? 0 : n;
  }

  /** The buffer of `key` (checked). */
  buffer(key: string): HostBuffer {
    this.alive();
    const b = this.buffers.get(key);
    if (b === undefined)
      throw new ExecutorError(
        "unknown-state",
        `no state "${key}" (states: ${[...this.buffers.keys()].join(", ") || "none"})`,
        { program: this.program, key },
      );
    return b;
  }

  private spec(key: string): StateSpec {
    this.buffer(key);
    return this.schema.states.get(key)!;
  }

  read(key: string): OutputData {
    return loadHost(this.spec(key).dtype, this.buffer(key));
  }

  write(key: string, data: ArrayLike<number>): void {
    const s = this.spec(key);
    if (data.length !== s.size)
      throw new ExecutorError("state-mismatch", `state takes ${s.size} elements, got ${data.length}`, {
        program: this.program,
        key,
        expected: s.size,
        actual: data.length,
      });
    storeHost(s.dtype, this.buffer(key), data);
  }

  copyLanes(from: StateSet, fromLane: number, toLane: number, count = 1): void {
    this.alive();
    if (!(from instanceof HostStateSet))
      throw new ExecutorError("unknown-state", "lanes copy only between StateSets of one executor", {
        program: this.program,
      });
    if (!sameLaneLayout(this.schema, from.schema))
      throw new ExecutorError("unknown-state", "the two StateSets have different per-lane layouts", {
        program: this.program,
      });
    const bad = (lane: number, lanes: number) => !Number.isInteger(lane) || lane < 0 || lane + count > lanes;
    if (!Number.isInteger(count) || count < 1 || bad(fromLane, from.lanes) || bad(toLane, this.lanes)) {
      throw new ExecutorError(
        "state-mismatch",
        `cannot copy ${count} lane(s) ${fromLane} -> ${toLane} between sets of ${from.lanes} and ${this.lanes} lanes`,
        { program: this.program, expected: this.lanes, actual: `${fromLane}->${toLane}x${count}` },
      );
    }
    for (const s of this.schema.states.values()) {
      // Lanes are the leading dimension, so a lane is one contiguous run of the buffer.
      const per = s.size / this.lanes;
      const src = from.buffer(s.key),
        dst = this.buffer(s.key);
      dst.set(src.subarray(fromLane * per, (fromLane + count) * per) as never, toLane * per);
    }
  }

  zero(): void {
    this.alive();
    for (const b of this.buffers.values()) b.fill(0);
  }

  dispose(): void {
    this.disposed = true;
    this.buffers.clear();
    this.onDispose?.(this);
  }

  private alive(): void {
    if (this.disposed) throw new ExecutorError("disposed", "StateSet used after dispose", { program: this.program });
  }
}

/**
 * Checks the StateSet a step of `schema` is given: null when the program has no State; else `state` must be one
 * `owns` (made by the same executor) with the program's layout (`unknown-state` otherwise).
 */
export function checkStateFor<S extends StateSet>(
  schema: ProgramSchema,
  state: StateSet | undefined,
  program: string,
  owns: (s: StateSet) => s is S,
): S | null {
  if (schema.states.size === 0) return null;
  if (state === undefined)
    throw new ExecutorError(
      "unknown-state",
      `the program has ${schema.states.size} state(s): pass a StateSet from createState()`,
      { program },
    );
  if (!owns(state)) throw new ExecutorError("unknown-state", "StateSet was not made by this executor", { program });
  for (const s of schema.states.values()) {
    const t = state.schema.states.get(s.key);
    if (t === undefined || t.size !== s.size || t.dtype !== s.dtype)
      throw new ExecutorError("unknown-state", "StateSet layout differs from the program's", { program, key: s.key });
  }
  return state;
}

// Memory of the interpreter: bounds-checked accessors for global, workgroup and private arrays, storage
// widening/narrowing, atomics, and the per-barrier-interval race detector on workgroup memory.

import { KernelRuntimeError } from "./errors.js";
import { lanesOf } from "./ir-types.js";
import type { ElemType } from "./ir.js";
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from "./numeric.js";

/** A typed array the interpreter accepts as a buffer. */
export type KernelBuffer = Float32Array | Int32Array | Uint32Array | Uint16Array | Uint8Array | Int8Array;

/** The typed-array class that backs each element type (bf16/f16 as raw Uint16 bits, vectors flattened). */
export function arrayClassFor(elem: ElemType): { readonly name: string; readonly make: (n: number) => KernelBuffer } {
  switch (elem) {
    case "f32":
    case "vec2<f32>":
    case "vec4<f32>":
    case "vec8<f32>":
    case "vec16<f32>":
      return { name: "Float32Array", make: (n) => new Float32Array(n) };
    case "i32":
    case "vec2<i32>":
    case "vec4<i32>":
    case "vec8<i32>":
    case "vec16<i32>":
      return { name: "Int32Array", make: (n) => new Int32Array(n) };
    case "u32":
    case "vec2<u32>":
    case "vec4<u32>":
    case "vec8<u32>":
    case "vec16<u32>":
      return { name: "Uint32Array", make: (n) => new Uint32Array(n) };
    case "bf16":
    case "f16":
      return { name: "Uint16Array", make: (n) => new Uint16Array(n) };
    case "u8":
      return { name: "Uint8Array", make: (n) => new Uint8Array(n) };
    case "i8":
      return { name: "Int8Array", make: (n) => new Int8Array(n) };
    default:
      elem satisfies never;
      throw new Error("invariant: element type");
  }
}

/** The thread fields an accessor needs. */
export interface ThreadRef {
  readonly li: number;
}

/** Load/store/atomic closures for one array. */
export interface Accessors {
  readonly load: (i: number, t: ThreadRef) => number | number[];
  readonly store: (i: number, v: number | number[], t: ThreadRef) => void;
  readonly atomic: (op: string, i: number, v: number, cmp: number) => number;
}

/** Race-tracking state for one workgroup array: who wrote / read each element in the current interval. */
export class RaceTracker {
  private readonly wEpoch: Uint32Array;
  private readonly wThread: Int32Array;
  private readonly rEpoch: Uint32Array;
  private readonly rThread: Int32Array;
  /** Current barrier interval; bumped at every barrier and every new workgroup. */
  epoch = 1;
  constructor(
    n: number,
    private readonly onRace: (index: number, first: number, second: number, what: string) => never,
  ) {
    this.wEpoch = new Uint32Array(n);
    this.wThread = new Int32Array(n);
    this.rEpoch = new Uint32Array(n);
    this.rThread = new Int32Array(n);
  }
  read(i: number, t: number): void {
    const ep = this.epoch;
    if (this.wEpoch[i] === ep && this.wThread[i] !== t)
      this.onRace(i, this.wThread[i] as number, t, "written by thread %a then read by thread %b");
    if (this.rEpoch[i] !== ep) {
      this.rEpoch[i] = ep;
      this.rThread[i] = t;
      // -2 marks "read by several threads" in this interval.
    } else if (this.rThread[i] !== t) this.rThread[i] = -2;
  }
  write(i: number, t: number): void {
    const ep = this.epoch;
    if (this.wEpoch[i] === ep && this.wThread[i] !== t)
      this.onRace(i, this.wThread[i] as number, t, "written by thread %a and by thread %b");
    if (this.rEpoch[i] === ep && this.rThread[i] !== t)
      this.onRace(i, this.rThread[i] as number, t, "read by thread %a then written by thread %b");
    this.wEpoch[i] = ep;
    this.wThread[i] = t;
  }
}

/** Builds accessors over `data` holding `elem` elements; `race` (workgroup arrays) checks every plain access. */
export function makeAccessors(
  kernel: string,
  array: string,
  elem: ElemType,
  data: KernelBuffer,
  race: RaceTracker | undefined,
  where: () => { workgroup?: readonly [number, number, number] },
): Accessors {
  const lanes = lanesOf(elem);
  const length = data.length / lanes;
  const oob = (i: number, what: string): never => {
    throw new KernelRuntimeError("out_of_bounds", kernel, `${what} ${array}[${i}] outside [0, ${length})`, {
      array,
      index: i,
      length,
      ...where(),
    });
  };
  let load: Accessors["load"];
  let store: Accessors["store"];
  if (lanes > 1) {
    load = (i, t) => {
      if (!(i < length)) oob(i, "load");
      race?.read(i, t.li);
      return Array.from(data.subarray(i * lanes, i * lanes + lanes));
    };
    store = (i, v, t) => {
      if (!(i < length)) oob(i, "store");
      race?.write(i, t.li);
      data.set(v as number[], i * lanes);
    };
  } else {
    const widen = elem === "bf16" ? bf16BitsToF32 : elem === "f16" ? f16BitsToF32 : undefined;
    const narrow = elem === "bf16" ? f32ToBf16Bits : elem === "f16" ? f32ToF16Bits : undefined;
    load = (i, t) => {
      if (!(i < length)) oob(i, "load");
      race?.read(i, t.li);
      const x = data[i] as number;
      return widen === undefined ? x : widen(x);
    };
    // Typed-array assignment narrows u8/i8 modulo 2^8 and i32/u32 modulo 2^32, as the IR specifies.
    store = (i, v, t) => {
      if (!(i < length)) oob(i, "store");
      race?.write(i, t.li);
      data[i] = narrow === undefined ? (v as number) : narrow(v as number);
    };
  }
  const atomic: Accessors["atomic"] = (op, i, v, cmp) => {
    if (!(i < length)) oob(i, `atomic ${op} on`);
    const old = data[i] as number;
    switch (op) {
      case "add":
        data[i] = old + v;
        break;
      case "max":
        data[i] = Math.max(old, v);
        break;
      case "min":
        data[i] = Math.min(old, v);
        break;
      case "exchange":
      case "store":
        data[i] = v;
        break;
      case "cmpxchg":
        if (old === cmp) data[i] = v;
        break;
      case "load":
        break;
      default:
        throw new Error(`invariant: atomic op ${op}`);
    }
    return old;
  };
  return { load, store, atomic };
}

/** Fills fresh workgroup memory with garbage (NaN / 0xDEADBEEF) so reading it before writing shows up. */
export function poison(data: KernelBuffer): void {
  if (data instanceof Float32Array) data.fill(NaN);
  else data.fill(0xdeadbeef);
}

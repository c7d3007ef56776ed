// The arrays a kernel body reads and writes (global buffers, workgroup-shared and private arrays): element loads,
// SIMD loads, stores and atomics, each appended to the body of the builder that declared the array (dsl.ts).

import { KernelDslError } from "./errors.js";
import { lanesOf, load4Types, widenedType } from "./ir-types.js";
import type { AddressSpace, AtomicOp, ElemType, Expr, LoadVecType, Stmt, ValueType } from "./ir.js";
import { Val } from "./dsl-val.js";
import type { ValOwner } from "./dsl-val.js";

/** An index operand: a u32 value or a constant. */
export type Index = Val<"u32"> | number;

/** The value type a load of element type `E` produces (storage-only types widen). */
export type Widened<E extends ElemType> = E extends "bf16" | "f16"
  ? "f32"
  : E extends "u8"
    ? "u32"
    : E extends "i8"
      ? "i32"
      : E;
/** Element types an atomic add supports. */
export type AtomicType = "u32" | "i32" | "f32";

/** What an {@link Arr} needs of the builder that declared it (the kernel DSL's `Builder`). */
export interface ArrOwner extends ValOwner {
  /** Appends a statement to the current block. */
  emit(st: Stmt): void;
  /** A local name not used yet in the kernel, from `hint`. */
  fresh(hint: string): string;
  /** An index operand as a u32 expression. */
  idx(i: Index): Expr;
  /** A value or literal as an expression of type `t`. */
  coerce(v: Val | number | boolean, t: ValueType): Expr;
  /** Binds `e` to a fresh immutable local and returns it. */
  bind<T extends ValueType>(e: Expr & { type: T }, hint: string): Val<T>;
}

/** A global buffer, shared array or private array: `at` loads (at this point of the body), `set` stores. */
export class Arr<E extends ElemType = ElemType> {
  /** @internal */
  constructor(
    readonly name: string,
    readonly elem: E,
    readonly space: AddressSpace,
    private readonly b: ArrOwner,
  ) {}
  /** Loads element `i` now (bound to a fresh immutable), widened for bf16/f16/u8/i8. */
  at(i: Index): Val<Widened<E>> {
    const type = widenedType(this.elem);
    return this.b.bind(
      { k: "load", type, space: this.space, array: this.name, index: this.b.idx(i) },
      `${this.name}_v`,
    ) as unknown as Val<Widened<E>>;
  }
  /**
   * Loads elements `i` … `i + 3` of a global buffer of scalar elements as one vec4 now (`load4`, a SIMD load),
   * widened like `at`; for u8/i8 buffers `type` picks zero (`vec4<u32>`) or sign (`vec4<i32>`) extension.
   */
  at4<T extends "vec4<f32>" | "vec4<i32>" | "vec4<u32>">(i: Index, type?: T): Val<T> {
    return this.atVec(i, type ?? (load4Types(this.elem)[0] as T | undefined));
  }
  /**
   * Loads elements `i` … `i + lanes - 1` of a global buffer of scalar elements as one vector of `type` (4, 8 or 16
   * lanes: `load4`, a SIMD load), widened like `at`; for u8/i8 buffers `type` picks zero or sign extension. vec8 and
   * vec16 lower only on targets whose caps report that many `vectorLanes` (decision 2310).
   */
  atVec<T extends LoadVecType>(i: Index, type: T | undefined): Val<T> {
    if (this.space !== "global")
      throw new KernelDslError(this.b.kernelName, `load4 of ${this.space} array ${this.name}: only global buffers`);
    const t = type;
    if (t === undefined || load4Types(this.elem).length === 0)
      throw new KernelDslError(this.b.kernelName, `load4 of ${this.name}: its elements (${this.elem}) are not scalars`);
    return this.b.bind(
      { k: "load4", type: t, array: this.name, index: this.b.idx(i) },
      `${this.name}_v${lanesOf(t)}`,
    ) as unknown as Val<T>;
  }
  /**
   * Loads bytes `i` … `i + 15` of a u8/i8 global buffer now, four packed into each u32 lane (`load4` with `packed`,
   * decision 2320): the operand of {@link Builder.dot4U8I8}.
   */
  at16x8(i: Index): Val<"vec4<u32>"> {
    return this.packed(i, "vec4<u32>");
  }
  /** Bytes `i` … `i + 31` packed into a vec8<u32>, as {@link Arr.at16x8} (256-bit `vpdpbusd`; decision 2330). */
  at32x8(i: Index): Val<"vec8<u32>"> {
    return this.packed(i, "vec8<u32>");
  }
  /** Bytes `i` … `i + 63` packed into a vec16<u32>, as {@link Arr.at16x8} (512-bit `vpdpbusd`; decision 2330). */
  at64x8(i: Index): Val<"vec16<u32>"> {
    return this.packed(i, "vec16<u32>");
  }
  private packed<T extends "vec4<u32>" | "vec8<u32>" | "vec16<u32>">(i: Index, type: T): Val<T> {
    const bytes = 4 * lanesOf(type);
    if (this.space !== "global" || (this.elem !== "u8" && this.elem !== "i8"))
      throw new KernelDslError(this.b.kernelName, `at${bytes}x8 of ${this.name}: only global u8/i8 buffers`);
    return this.b.bind(
      { k: "load4", type, array: this.name, index: this.b.idx(i), packed: true },
      `${this.name}_p${bytes}`,
    ) as unknown as Val<T>;
  }
  /** Stores `v` to element `i` (narrowed for storage-only element types). */
  set(i: Index, v: Val<Widened<E>> | number): void {
    const t = widenedType(this.elem);
    this.b.emit({ s: "store", space: this.space, array: this.name, index: this.b.idx(i), value: this.b.coerce(v, t) });
  }
  private atomic(op: AtomicOp, i: Index, value?: Val | number, compare?: Val | number): Val<Extract<E, AtomicType>> {
    const type = this.elem as AtomicType;
    if (this.space === "private") throw new KernelDslError(this.b.kernelName, "atomics on private arrays");
    const name = op === "store" ? undefined : this.b.fresh(`${this.name}_old`);
    const st: Stmt = {
      s: "atomic",
      op,
      type,
      space: this.space,
      array: this.name,
      index: this.b.idx(i),
      ...(value === undefined ? {} : { value: this.b.coerce(value, type) }),
      ...(compare === undefined ? {} : { compare: this.b.coerce(compare, type) }),
      ...(name === undefined ? {} : { name }),
    };
    this.b.emit(st);
    return new Val({ k: "local", type, name: name ?? "_" }, type, this.b) as Val<Extract<E, AtomicType>>;
  }
  /** Atomic add; returns the old value. */
  atomicAdd(i: Index, v: Val | number): Val<Extract<E, AtomicType>> {
    return this.atomic("add", i, v);
  }
  /** Atomic max; returns the old value. */
  atomicMax(i: Index, v: Val | number): Val<Extract<E, AtomicType>> {
    return this.atomic("max", i, v);
  }
  /** Atomic min; returns the old value. */
  atomicMin(i: Index, v: Val | number): Val<Extract<E, AtomicType>> {
    return this.atomic("min", i, v);
  }
  /** Atomic exchange; returns the old value. */
  atomicExchange(i: Index, v: Val | number): Val<Extract<E, AtomicType>> {
    return this.atomic("exchange", i, v);
  }
  /** Atomic compare-and-swap: writes `v` if the element equals `compare`; returns the old value. */
  atomicCmpxchg(i: Index, compare: Val | number, v: Val | number): Val<Extract<E, AtomicType>> {
    return this.atomic("cmpxchg", i, v, compare);
  }
  /** Atomic load. */
  atomicLoad(i: Index): Val<Extract<E, AtomicType>> {
    return this.atomic("load", i);
  }
  /** Atomic store. */
  atomicStore(i: Index, v: Val | number): void {
    this.atomic("store", i, v);
  }
}

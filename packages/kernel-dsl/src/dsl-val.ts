// DSL values: typed wrappers around IR expressions with operator methods (`a.add(b).mul(2)`), used by dsl.ts.
// Numbers mixed with a value become literals of that value's type; mismatched types throw KernelDslError.

import { KernelDslError } from "./errors.js";
import { elemOf, isVecType, lanesOf } from "./ir-types.js";
import type { BinaryOp, CmpOp, Expr, ScalarType, UnaryOp, ValueType, VecElem } from "./ir.js";

/** Element type of a vector type, for typing `.x/.y/.z/.w`. */
export type ElemOfType<T extends ValueType> = T extends `vec${2 | 4 | 8 | 16}<${infer E extends VecElem}>` ? E : T;

/** What a DSL value needs from its kernel: the kernel name for errors. */
export interface ValOwner {
  readonly kernelName: string;
}

/** A literal expression of a scalar or (splatted) vector type. */
export function literal(owner: ValOwner, type: ValueType, n: number | boolean): Expr {
  const el = elemOf(type);
  let value: number | boolean = n;
  if (el === "bool") {
    if (typeof n !== "boolean") throw new KernelDslError(owner.kernelName, `bool literal must be true/false, got ${n}`);
  } else {
    if (typeof n !== "number") throw new KernelDslError(owner.kernelName, `${type} literal must be a number`);
    if (el === "f32") value = Math.fround(n);
    else if (!Number.isInteger(n) || (el === "u32" ? n < 0 || n > 0xffffffff : n < -0x80000000 || n > 0x7fffffff)) {
      throw new KernelDslError(owner.kernelName, `${n} is not a valid ${el} literal`);
    }
  }
  const scalar: Expr = { k: "const", type: el, value };
  if (!isVecType(type)) return scalar;
  return { k: "vec", type, elems: Array.from({ length: lanesOf(type) }, () => scalar) };
}

/** A typed value in a kernel being built. Immutable: operators return new values (pure expressions). */
export class Val<T extends ValueType = ValueType> {
  /** @internal */
  constructor(
    readonly expr: Expr,
    readonly type: T,
    protected readonly owner: ValOwner,
  ) {}

  /** Coerces `o` to an expression of type `t` (numbers/booleans become literals). */
  protected operand(o: Val | number | boolean, t: ValueType = this.type): Expr {
    if (o instanceof Val) {
      if (o.type !== t)
        throw new KernelDslError(
          this.owner.kernelName,
          `operand type ${o.type} where ${t} is required (cast explicitly)`,
        );
      return o.expr;
    }
    return literal(this.owner, t, o);
  }

  private bin(op: BinaryOp, o: Val<T> | number | boolean): Val<T> {
    return new Val({ k: "binary", type: this.type, op, a: this.expr, b: this.operand(o) }, this.type, this.owner);
  }
  private cmp(op: CmpOp, o: Val<T> | number | boolean): Val<"bool"> {
    return new Val({ k: "cmp", type: "bool", op, a: this.expr, b: this.operand(o) }, "bool", this.owner);
  }
  private un(op: UnaryOp): Val<T> {
    return new Val({ k: "unary", type: this.type, op, a: this.expr }, this.type, this.owner);
  }

  /** `this + o` (wrapping for integers). */
  add(o: Val<T> | number): Val<T> {
    return this.bin("add", o);
  }
  /** `this - o`. */
  sub(o: Val<T> | number): Val<T> {
    return this.bin("sub", o);
  }
  /** `this * o`. */
  mul(o: Val<T> | number): Val<T> {
    return this.bin("mul", o);
  }
  /** `this / o` (truncating for integers). */
  div(o: Val<T> | number): Val<T> {
    return this.bin("div", o);
  }
  /** Remainder (truncating). */
  rem(o: Val<T> | number): Val<T> {
    return this.bin("rem", o);
  }
  /** Bitwise (logical on bool) and. */
  and(o: Val<T> | number | boolean): Val<T> {
    return this.bin("and", o);
  }
  /** Bitwise (logical on bool) or. */
  or(o: Val<T> | number | boolean): Val<T> {
    return this.bin("or", o);
  }
  /** Bitwise (logical on bool) xor. */
  xor(o: Val<T> | number | boolean): Val<T> {
    return this.bin("xor", o);
  }
  /** Shift left (count mod 32). */
  shl(o: Val<T> | number): Val<T> {
    return this.bin("shl", o);
  }
  /** Shift right: arithmetic for i32, logical for u32. */
  shr(o: Val<T> | number): Val<T> {
    return this.bin("shr", o);
  }
  /** Negation. */
  neg(): Val<T> {
    return this.un("neg");
  }
  /** Bitwise not (logical on bool). */
  not(): Val<T> {
    return this.un("not");
  }
  /** `this == o`. */
  eq(o: Val<T> | number | boolean): Val<"bool"> {
    return this.cmp("eq", o);
  }
  /** `this != o`. */
  ne(o: Val<T> | number | boolean): Val<"bool"> {
    return this.cmp("ne", o);
  }
  /** `this < o`. */
  lt(o: Val<T> | number): Val<"bool"> {
    return this.cmp("lt", o);
  }
  /** `this <= o`. */
  le(o: Val<T> | number): Val<"bool"> {
    return this.cmp("le", o);
  }
  /** `this > o`. */
  gt(o: Val<T> | number): Val<"bool"> {
    return this.cmp("gt", o);
  }
  /** `this >= o`. */
  ge(o: Val<T> | number): Val<"bool"> {
    return this.cmp("ge", o);
  }

  /** Value conversion to `to` (see the IR `cast`). */
  cast<U extends ValueType>(to: U): Val<U> {
    if (lanesOf(to) !== lanesOf(this.type))
      throw new KernelDslError(this.owner.kernelName, `cast ${this.type} -> ${to} changes the lane count`);
    return new Val({ k: "cast", type: to, a: this.expr }, to, this.owner);
  }
  /** Reinterpret the 32-bit pattern as `to`. */
  bitcast<U extends ValueType>(to: U): Val<U> {
    return new Val({ k: "bitcast", type: to, a: this.expr }, to, this.owner);
  }
  /** Shorthand for `cast("f32")`. */
  f32(): Val<"f32"> {
    return this.cast("f32");
  }
  /** Shorthand for `cast("u32")`. */
  u32(): Val<"u32"> {
    return this.cast("u32");
  }
  /** Shorthand for `cast("i32")`. */
  i32(): Val<"i32"> {
    return this.cast("i32");
  }

  /** Vector component `lane`. */
  lane(lane: number): Val<ElemOfType<T>> {
    if (!isVecType(this.type) || lane < 0 || lane >= lanesOf(this.type))
      throw new KernelDslError(this.owner.kernelName, `no lane ${lane} in ${this.type}`);
    const t = elemOf(this.type) as ElemOfType<T>;
    return new Val({ k: "extract", type: t as VecElem, a: this.expr, lane }, t, this.owner);
  }
  /** Component 0 of a vector. */
  get x(): Val<ElemOfType<T>> {
    return this.lane(0);
  }
  /** Component 1 of a vector. */
  get y(): Val<ElemOfType<T>> {
    return this.lane(1);
  }
  /** Component 2 of a vec4. */
  get z(): Val<ElemOfType<T>> {
    return this.lane(2);
  }
  /** Component 3 of a vec4. */
  get w(): Val<ElemOfType<T>> {
    return this.lane(3);
  }
}

/** A mutable private variable; `set` emits an assignment at the current point of the body. */
export class Var<T extends ValueType = ValueType> extends Val<T> {
  /** @internal */
  constructor(
    readonly name: string,
    type: T,
    owner: ValOwner,
    private readonly emitAssign: (name: string, value: Expr) => void,
  ) {
    super({ k: "local", type, name }, type, owner);
  }
  /** Assigns `v` (a value of this type or a number). */
  set(v: Val<T> | number | boolean): void {
    this.emitAssign(this.name, this.operand(v));
  }
}

/** Scalar type of integer-or-float values usable as loop bounds. */
export type IndexType = Extract<ScalarType, "i32" | "u32">;

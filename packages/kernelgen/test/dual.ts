// A test-side tracer that builds the same elementwise math twice: as a kernelgen expression DAG and as
// graph-ir primitives (Cast to f32 on load, Cast to the storage dtype at the end) for the float64 oracle.

import type { Builder, Ref } from "@poot/graph-ir";
import type { BinaryFn, CmpFn, ExprNode, ExprType, UnaryFn } from "@poot/kernelgen";

/** A value traced both ways. */
export interface D {
  readonly i: number;
  readonly ref: Ref;
}

const BIN: Record<string, string> = {
  add: "Add",
  sub: "Sub",
  mul: "Mul",
  div: "Div",
  max: "Max",
  min: "Min",
  pow: "Pow",
  and: "And",
  or: "Or",
  xor: "Xor",
  shl: "Shl",
  shr: "Shr",
};
const UN: Record<string, string> = {
  neg: "Neg",
  exp: "Exp",
  log: "Log",
  sqrt: "Sqrt",
  recip: "Recip",
  tanh: "Tanh",
  erf: "Erf",
  sin: "Sin",
  cos: "Cos",
  abs: "Abs",
  not: "Not",
};
const CMP: Record<string, "Eq" | "Ne" | "Lt" | "Le" | "Gt" | "Ge"> = {
  eq: "Eq",
  ne: "Ne",
  lt: "Lt",
  le: "Le",
  gt: "Gt",
  ge: "Ge",
};

/** Builds an ExprNode DAG and the equivalent graph-ir graph in lockstep. */
export class Dual {
  readonly nodes: ExprNode[] = [];
  constructor(readonly g: Builder) {}
  private push(n: ExprNode, ref: Ref): D {
    this.nodes.push(n);
    return { i: this.nodes.length - 1, ref };
  }
  /** A leaf; `ref` is its graph value already in the expression's type (f32 for float storage). */
  leaf(name: string, ref: Ref): D {
    return this.push({ op: "leaf", name }, ref);
  }
  const(value: number, type: Exclude<ExprType, "bool">): D {
    return this.push(
      { op: "const", value, type },
      this.g.computed(
        type,
        [],
        type === "f32" ? Float32Array.of(value) : type === "i32" ? Int32Array.of(value) : Uint32Array.of(value),
      ),
    );
  }
  bin(fn: BinaryFn, a: D, b: D): D {
    return this.push({ op: "binary", fn, a: a.i, b: b.i }, this.g.emit(BIN[fn]!, [a.ref, b.ref]));
  }
  un(fn: UnaryFn, a: D): D {
    return this.push({ op: "unary", fn, a: a.i }, this.g.emit(UN[fn]!, [a.ref]));
  }
  cmp(fn: CmpFn, a: D, b: D): D {
    return this.push({ op: "cmp", fn, a: a.i, b: b.i }, this.g.cmp(CMP[fn]!, a.ref, b.ref));
  }
  select(c: D, a: D, b: D): D {
    return this.push({ op: "select", cond: c.i, a: a.i, b: b.i }, this.g.select(c.ref, a.ref, b.ref));
  }
  cast(a: D, to: ExprType): D {
    return this.push({ op: "cast", to, a: a.i }, this.g.cast(a.ref, to));
  }
  round(a: D, to: "bf16" | "f16"): D {
    return this.push({ op: "round", to, a: a.i }, this.g.cast(this.g.cast(a.ref, to), "f32"));
  }
  silu(x: D): D {
    return this.bin("div", x, this.bin("add", this.un("exp", this.un("neg", x)), this.const(1, "f32")));
  }
}

// The shared driver of register-machine targets (PTX, LLVM IR, SPIR-V, Wasm): walks statements and
// expressions once, leaving each target only instruction selection and its way of expressing control flow.

import type {
  AddressSpace,
  AtomicOp,
  BinaryOp,
  CmpOp,
  ElemType,
  Expr,
  MathFn,
  MmaInput,
  MmaShape,
  PackFormat,
  Stmt,
  SubgroupOp,
  UnaryOp,
  ValueType,
} from "@poot/kernel-dsl";
import { CodegenError, invariant } from "../errors.js";
import { lastUses, type RegLifetimes } from "./lifetimes.js";
import type { PreparedKernel } from "./prepare.js";

export type { RegLifetimes } from "./lifetimes.js";

/**
 * Instruction selection for one target. `V` is the target's operand (a register name, an SSA id, a
 * local index). Every method that returns `V` emits whatever instructions it needs first.
 */
export interface RegTarget<V> {
  constant(type: ValueType, value: number | boolean): V;
  builtin(name: string, axis: 0 | 1 | 2 | undefined): V;
  param(name: string, type: "u32" | "i32" | "f32"): V;
  load(space: AddressSpace, array: string, elem: ElemType, index: V, type: ValueType): V;
  store(space: AddressSpace, array: string, elem: ElemType, index: V, value: V, type: ValueType): void;
  unary(op: UnaryOp, type: ValueType, a: V): V;
  binary(op: BinaryOp, type: ValueType, a: V, b: V): V;
  cmp(op: CmpOp, operand: ValueType, a: V, b: V): V;
  select(type: ValueType, cond: V, a: V, b: V): V;
  call(fn: MathFn, type: ValueType, args: readonly V[]): V;
  cast(from: ValueType, to: ValueType, a: V): V;
  bitcast(from: ValueType, to: ValueType, a: V): V;
  pack(fmt: PackFormat, a: V): V;
  unpack(fmt: PackFormat, type: ValueType, a: V): V;
  vec(type: ValueType, elems: readonly V[]): V;
  extract(vecType: ValueType, lane: number, a: V): V;
  /** Four consecutive elements of a global buffer as one vec4 (`load4`; only SIMD targets implement it). */
  load4?(array: string, elem: ElemType, index: V, type: ValueType, packed?: boolean): V;
  subgroup(op: SubgroupOp, type: ValueType, value: V, lane: V | undefined): V;
  /** Warp-scope matrix multiply-accumulate of `shape` (only targets with matrix units implement it; prepare checks). */
  mma?(shape: MmaShape, input: MmaInput, a: V, b: V, c: V): V;
  atomic(
    op: AtomicOp,
    type: "u32" | "i32" | "f32",
    space: "global" | "workgroup",
    array: string,
    index: V,
    value: V | undefined,
    compare: V | undefined,
  ): V | undefined;
  barrier(): void;
  /** Declares a mutable variable holding `init`. */
  newVar(name: string, type: ValueType, init: V): void;
  readVar(name: string, type: ValueType): V;
  writeVar(name: string, type: ValueType, v: V): void;
  /** Declares a zero-initialized private array. */
  privateArray(name: string, elem: ValueType, length: number): void;
  ifElse(cond: V, then: () => void, otherwise: (() => void) | undefined): void;
  /** A loop: `cond` is evaluated before each iteration, `step` after each (and on `continue`). */
  loop(cond: () => V, body: () => void, step: () => void): void;
  breakLoop(): void;
  continueLoop(): void;
  ret(): void;
}

type Binding<V> = { readonly kind: "value"; readonly v: V } | { readonly kind: "var"; readonly type: ValueType };

/** Options of {@link makeDriver}. */
export interface DriverOptions<V = unknown> {
  /**
   * Hold `let`, subgroup and atomic results in variables too (targets that keep per-thread state in
   * memory across barrier regions, such as Wasm, need every name to outlive the code that defined it).
   */
  readonly letsAsVars?: boolean;
  /**
   * Register reuse (Wasm locals): temporaries freed after each statement, and (without `letsAsVars`) each name's
   * register dropped after its last use in its block.
   */
  readonly lifetimes?: RegLifetimes<V>;
}

/** The driver's entry points: evaluate an expression, emit a statement or a block. */
export interface Driver<V> {
  expr(e: Expr): V;
  stmt(s: Stmt): void;
  block(body: readonly Stmt[]): void;
  /** Binds `name` as a variable the target already holds (declared outside the driver). */
  bindVar(name: string, type: ValueType): void;
}

/** Walks a prepared kernel's body, driving `t`. */
export function driveBody<V>(p: PreparedKernel, t: RegTarget<V>): void {
  makeDriver(p, t).block(p.kernel.body);
}

/** A driver over `t` whose name bindings persist across calls (for targets that emit the body in pieces). */
export function makeDriver<V>(p: PreparedKernel, t: RegTarget<V>, options: DriverOptions<V> = {}): Driver<V> {
  const env = new Map<string, Binding<V>>();
  const lt = options.lifetimes;
  const bindValue = (name: string, type: ValueType, v: V): void => {
    if (options.letsAsVars) {
      t.newVar(name, type, v);
      env.set(name, { kind: "var", type });
    } else {
      lt?.hold(v);
      env.set(name, { kind: "value", v });
    }
  };
  /** Name `name` is dead (register reuse): its value or variable register may be reused. */
  const end = (lifetimes: RegLifetimes<V>, name: string): void => {
    const b = env.get(name);
    if (b === undefined) return;
    env.delete(name);
    if (b.kind === "value") lifetimes.drop(b.v);
    else lifetimes.dropVar(name, b.type);
  };
  const elems = new Map<string, ElemType>();
  for (const b of p.buffers) elems.set(`global:${b.name}`, b.elem);
  for (const s of p.shared) elems.set(`workgroup:${s.name}`, s.elem);
  for (const a of p.privates) elems.set(`private:${a.name}`, a.elem);
  const kernel = p.kernel.name;
  const elemOfArray = (space: AddressSpace, array: string): ElemType => {
    const e = elems.get(`${space}:${array}`);
    if (e === undefined)
      throw new CodegenError("invalid-kernel", `unknown ${space} array ${array}`, {
        kernel,
        target: p.target,
        construct: array,
      });
    return e;
  };

  const expr = (e: Expr): V => {
    switch (e.k) {
      case "const":
        return t.constant(e.type, e.value);
      case "local": {
        const b = env.get(e.name);
        if (b === undefined)
          throw new CodegenError("invalid-kernel", `unknown local ${e.name}`, {
            kernel,
            target: p.target,
            construct: e.name,
          });
        return b.kind === "value" ? b.v : t.readVar(e.name, b.type);
      }
      case "param":
        return t.param(e.name, e.type);
      case "spec": {
        const v = p.specs.get(e.name);
        invariant(v !== undefined, `spec ${e.name} resolved by prepare()`);
        return t.constant("u32", v);
      }
      case "builtin":
        if (e.name === "workgroup_size") return t.constant("u32", p.workgroupSize[e.axis]);
        if (e.name === "subgroup_size") return t.constant("u32", p.subgroupSize);
        return t.builtin(e.name, "axis" in e ? e.axis : undefined);
      case "load":
        return t.load(e.space, e.array, elemOfArray(e.space, e.array), expr(e.index), e.type);
      case "unary":
        return t.unary(e.op, e.type, expr(e.a));
      case "binary":
        return t.binary(e.op, e.type, expr(e.a), expr(e.b));
      case "cmp":
        return t.cmp(e.op, e.a.type, expr(e.a), expr(e.b));
      case "select": {
        const c = expr(e.cond);
        return t.select(e.type, c, expr(e.a), expr(e.b));
      }
      case "call":
        return t.call(e.fn, e.type, e.args.map(expr));
      case "cast":
        return t.cast(e.a.type, e.type, expr(e.a));
      case "bitcast":
        return t.bitcast(e.a.type, e.type, expr(e.a));
      case "pack":
        return t.pack(e.fmt, expr(e.a));
      case "unpack":
        return t.unpack(e.fmt, e.type, expr(e.a));
      case "vec":
        return t.vec(e.type, e.elems.map(expr));
      case "extract":
        return t.extract(e.a.type, e.lane, expr(e.a));
      case "load4":
        if (t.load4 === undefined)
          throw new CodegenError("missing-capability", `the ${p.target} target cannot lower load4`, {
            kernel,
            target: p.target,
            construct: "load4",
          });
        return t.load4(e.array, elemOfArray("global", e.array), expr(e.index), e.type, e.packed === true);
      default:
        e satisfies never;
        throw new Error("unreachable");
    }
  };

  const block = (body: readonly Stmt[]): void => {
    if (lt === undefined) {
      for (const s of body) stmt(s);
      return;
    }
    // With letsAsVars the names live in memory and a caller may emit a block in pieces (Wasm barrier regions), so
    // only temporaries are freed; otherwise each name declared here ends after its last use here.
    const ends = options.letsAsVars ? [] : lastUses(body);
    body.forEach((s, i) => {
      const m = lt.mark();
      stmt(s);
      lt.freeSince(m);
      for (const name of ends[i] ?? []) end(lt, name);
    });
  };

  const stmt = (s: Stmt): void => {
    switch (s.s) {
      case "let":
        bindValue(s.name, s.type, expr(s.value));
        return;
      case "var":
        t.newVar(s.name, s.type, expr(s.init));
        env.set(s.name, { kind: "var", type: s.type });
        return;
      case "array": {
        const a = p.privates.find((x) => x.name === s.name);
        invariant(a !== undefined, `private array ${s.name} collected by prepare()`);
        t.privateArray(s.name, s.elem, a.length);
        return;
      }
      case "assign": {
        const b = env.get(s.name);
        if (b?.kind !== "var")
          throw new CodegenError("invalid-kernel", `assignment to ${s.name}, which is not a var`, {
            kernel,
            target: p.target,
            construct: s.name,
          });
        t.writeVar(s.name, b.type, expr(s.value));
        return;
      }
      case "store": {
        const elem = elemOfArray(s.space, s.array);
        t.store(s.space, s.array, elem, expr(s.index), expr(s.value), s.value.type);
        return;
      }
      case "for": {
        // start/end/step are evaluated once, before the loop (IR semantics).
        const start = expr(s.start);
        const end = expr(s.end);
        const step = expr(s.step);
        t.newVar(s.var, s.type, start);
        env.set(s.var, { kind: "var", type: s.type });
        t.loop(
          () => t.cmp("lt", s.type, t.readVar(s.var, s.type), end),
          () => block(s.body),
          () => t.writeVar(s.var, s.type, t.binary("add", s.type, t.readVar(s.var, s.type), step)),
        );
        return;
      }
      case "while":
        t.loop(
          () => expr(s.cond),
          () => block(s.body),
          () => {},
        );
        return;
      case "if":
        t.ifElse(expr(s.cond), () => block(s.then), s.else.length > 0 ? () => block(s.else) : undefined);
        return;
      case "break":
        t.breakLoop();
        return;
      case "continue":
        t.continueLoop();
        return;
      case "barrier":
        t.barrier();
        return;
      case "subgroup": {
        const v = expr(s.value);
        bindValue(s.name, s.type, t.subgroup(s.op, s.type, v, s.lane ? expr(s.lane) : undefined));
        return;
      }
      case "mma": {
        if (t.mma === undefined)
          throw new CodegenError("missing-capability", `the ${p.target} target cannot lower mma`, {
            kernel,
            target: p.target,
            construct: `mma.${s.shape}.${s.input}`,
          });
        const a = expr(s.a),
          b = expr(s.b),
          c = expr(s.c);
        bindValue(s.name, "vec4<f32>", t.mma(s.shape, s.input, a, b, c));
        return;
      }
      case "atomic": {
        const idx = expr(s.index);
        const val = s.value ? expr(s.value) : undefined;
        const cmpv = s.compare ? expr(s.compare) : undefined;
        const r = t.atomic(s.op, s.type, s.space, s.array, idx, val, cmpv);
        if (s.name !== undefined) {
          invariant(r !== undefined, `atomic ${s.op} returns a value`);
          bindValue(s.name, s.type, r);
        }
        return;
      }
      case "return":
        t.ret();
        return;
      default:
        s satisfies never;
    }
  };

  return { expr, stmt, block, bindVar: (name, type) => void env.set(name, { kind: "var", type }) };
}

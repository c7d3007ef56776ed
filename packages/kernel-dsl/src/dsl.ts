// The authoring DSL: `kernel(name, options, (k) => { ... })` runs a TypeScript builder that emits kernel IR.
// Statements are appended in call order to the current block; the result is validated before it is returned.

import { KernelDslError } from "./errors.js";
import type {
  AxisBuiltin,
  ElemType,
  Expr,
  Kernel,
  MathFn,
  MmaInput,
  MmaShape,
  PackFormat,
  Size,
  Stmt,
  SubgroupOp,
  ValueType,
  VecType,
} from "./ir.js";
import { Val, Var, literal } from "./dsl-val.js";
import type { IndexType } from "./dsl-val.js";
import { assertValidKernel } from "./validate.js";
import { Arr, type ArrOwner, type Index } from "./dsl-arr.js";

/** Options of `kernel()`. */
export interface KernelOptions {
  /** Workgroup size [x, y, z]; `{ spec: "WG" }` entries are specialization constants. */
  readonly workgroupSize: readonly [Size, Size, Size];
  /** Specialization constants and their defaults (`undefined` = must be supplied at launch/lowering). */
  readonly specs?: Readonly<Record<string, number | undefined>>;
}

/** Accumulator (and result) types of {@link Builder.dot4U8I8}. */
export type Dot4Acc = "i32" | "vec4<i32>" | "vec8<i32>" | "vec16<i32>";
/** The packed-byte operand type of {@link Builder.dot4U8I8} with accumulator `T`: u32 lanes as many as T's. */
export type Dot4Operand<T extends Dot4Acc> = T extends "i32"
  ? "u32"
  : T extends "vec4<i32>"
    ? "vec4<u32>"
    : T extends "vec8<i32>"
      ? "vec8<u32>"
      : "vec16<u32>";

/** Per-axis builtin values. */
export interface Axes {
  readonly x: Val<"u32">;
  readonly y: Val<"u32">;
  readonly z: Val<"u32">;
}

/** The builder a kernel body receives; every member is a bound function or value (safe to destructure). */
export class Builder implements ArrOwner {
  private readonly blocks: Stmt[][] = [[]];
  private readonly used = new Set<string>();
  /** Per hint, the suffix {@link fresh} tries first: names are only ever added, so lower suffixes stay taken. */
  private readonly nextSuffix = new Map<string, number>();
  private loopDepth = 0;
  /** @internal */ readonly decl: {
    buffers: Kernel["buffers"][number][];
    uniforms: Kernel["uniforms"][number][];
    shared: Kernel["shared"][number][];
  } = { buffers: [], uniforms: [], shared: [] };

  /** @internal */
  constructor(
    readonly kernelName: string,
    readonly specNames: readonly string[],
  ) {
    for (const s of specNames) this.used.add(s);
  }

  /** @internal */ emit = (st: Stmt): void => {
    (this.blocks[this.blocks.length - 1] as Stmt[]).push(st);
  };
  /** @internal */ fresh = (hint: string): string => {
    let name = hint;
    let n = this.nextSuffix.get(hint) ?? 1;
    if (this.used.has(name)) for (; this.used.has((name = `${hint}_${n}`)); n++);
    this.nextSuffix.set(hint, n);
    this.used.add(name);
    return name;
  };
  /** @internal */ idx = (i: Index): Expr => this.coerce(i, "u32");
  /** @internal */ coerce = (v: Val | number | boolean, t: ValueType): Expr => {
    if (v instanceof Val) {
      if (v.type !== t) throw new KernelDslError(this.kernelName, `value of type ${v.type} where ${t} is required`);
      return v.expr;
    }
    return literal(this, t, v);
  };
  /** @internal */ bind = <T extends ValueType>(e: Expr & { type: T }, hint: string): Val<T> => {
    const name = this.fresh(hint);
    this.emit({ s: "let", name, type: e.type, value: e });
    return new Val({ k: "local", type: e.type, name }, e.type, this);
  };
  private block(fn: () => void): Stmt[] {
    this.blocks.push([]);
    fn();
    return this.blocks.pop() as Stmt[];
  }
  private declName(name: string): string {
    if (this.used.has(name)) throw new KernelDslError(this.kernelName, `${name} is declared twice`);
    this.used.add(name);
    return name;
  }

  // ── declarations ──
  /** Declares a storage buffer (binding = declaration order unless given). */
  buffer = <E extends ElemType>(
    name: string,
    elem: E,
    access: "read" | "write" | "read_write",
    opts: { binding?: number; atomic?: boolean } = {},
  ): Arr<E> => {
    this.decl.buffers.push({
      name: this.declName(name),
      binding: opts.binding ?? this.decl.buffers.length,
      elem,
      access,
      ...(opts.atomic === true ? { atomic: true } : {}),
    });
    return new Arr(name, elem, "global", this);
  };
  /** Declares a scalar uniform parameter. */
  uniform = <T extends "u32" | "i32" | "f32">(name: string, type: T): Val<T> => {
    this.decl.uniforms.push({ name: this.declName(name), type });
    return new Val({ k: "param", type, name }, type, this);
  };
  /** Declares a workgroup-shared array. */
  shared = <E extends Exclude<ValueType, "bool">>(
    name: string,
    elem: E,
    length: Size,
    opts: { atomic?: boolean } = {},
  ): Arr<E> => {
    this.decl.shared.push({
      name: this.declName(name),
      elem,
      length,
      ...(opts.atomic === true ? { atomic: true } : {}),
    });
    return new Arr(name, elem, "workgroup", this);
  };
  /** Declares a private (per-thread) array, zero-initialized, here in the body. */
  privateArray = <E extends Exclude<ValueType, "bool">>(name: string, elem: E, length: Size): Arr<E> => {
    this.emit({ s: "array", name: this.declName(name), elem, length });
    return new Arr(name, elem, "private", this);
  };
  /** A specialization constant's value (declared in the kernel options). */
  spec = (name: string): Val<"u32"> => {
    if (!this.specNames.includes(name)) throw new KernelDslError(this.kernelName, `no spec constant ${name}`);
    return new Val({ k: "spec", type: "u32", name }, "u32", this);
  };

  // ── literals and builtins ──
  /** u32 literal. */ u32 = (n: number): Val<"u32"> => new Val(literal(this, "u32", n), "u32", this);
  /** i32 literal. */ i32 = (n: number): Val<"i32"> => new Val(literal(this, "i32", n), "i32", this);
  /** f32 literal (rounded to f32). */ f32 = (n: number): Val<"f32"> => new Val(literal(this, "f32", n), "f32", this);
  /** bool literal. */ bool = (b: boolean): Val<"bool"> => new Val(literal(this, "bool", b), "bool", this);
  private axes(name: AxisBuiltin): Axes {
    const at = (axis: 0 | 1 | 2): Val<"u32"> => new Val({ k: "builtin", type: "u32", name, axis }, "u32", this);
    return { x: at(0), y: at(1), z: at(2) };
  }
  /** Global invocation id. */ gid: Axes = this.axes("global_id");
  /** Local invocation id within the workgroup. */ lid: Axes = this.axes("local_id");
  /** Workgroup id. */ wid: Axes = this.axes("workgroup_id");
  /** Number of workgroups in the grid. */ nwg: Axes = this.axes("num_workgroups");
  /** Workgroup size. */ wgSize: Axes = this.axes("workgroup_size");
  /** Linearized local index. */ localIndex = new Val<"u32">(
    { k: "builtin", type: "u32", name: "local_index" },
    "u32",
    this,
  );
  /** Subgroup index within the workgroup. */ subgroupId = new Val<"u32">(
    { k: "builtin", type: "u32", name: "subgroup_id" },
    "u32",
    this,
  );
  /** Lane within the subgroup. */ subgroupLane = new Val<"u32">(
    { k: "builtin", type: "u32", name: "subgroup_lane" },
    "u32",
    this,
  );
  /** Subgroup size (a launch/caps value). */ subgroupSize = new Val<"u32">(
    { k: "builtin", type: "u32", name: "subgroup_size" },
    "u32",
    this,
  );

  // ── bindings ──
  /** Binds `v` to a fresh immutable (evaluated here, once). */
  let_ = <T extends ValueType>(v: Val<T>, name = "t"): Val<T> => this.bind(v.expr as Expr & { type: T }, name);
  /** Declares a mutable private variable initialized to `init`. */
  var_ = <T extends ValueType>(init: Val<T>, name = "v"): Var<T> => {
    const n = this.fresh(name);
    this.emit({ s: "var", name: n, type: init.type, init: init.expr });
    return new Var(n, init.type, this, (target, value) => this.emit({ s: "assign", name: target, value }));
  };

  // ── control flow and synchronization ──
  /** `if (cond) then() else otherwise()`. */
  if_ = (cond: Val<"bool">, then: () => void, otherwise?: () => void): void => {
    const t = this.block(then);
    const e = otherwise === undefined ? [] : this.block(otherwise);
    this.emit({ s: "if", cond: cond.expr, then: t, else: e });
  };
  /** `for (i = start; i < end; i += step) body(i)` over u32 or i32 (type of `start`). */
  for_ = <T extends IndexType>(
    start: Val<T>,
    end: Val<T> | number,
    step: Val<T> | number,
    body: (i: Val<T>) => void,
    name = "i",
  ): void => {
    const v = this.fresh(name);
    const t = start.type;
    this.loopDepth++;
    const b = this.block(() => body(new Val({ k: "local", type: t, name: v }, t, this)));
    this.loopDepth--;
    this.emit({
      s: "for",
      var: v,
      type: t,
      start: start.expr,
      end: this.coerce(end, t),
      step: this.coerce(step, t),
      body: b,
    });
  };
  /** `while (cond) body()`; `cond` may be a function whose loads are re-evaluated every iteration. */
  while_ = (cond: Val<"bool"> | (() => Val<"bool">), body: () => void): void => {
    this.loopDepth++;
    if (cond instanceof Val) {
      const b = this.block(body);
      this.emit({ s: "while", cond: cond.expr, body: b });
    } else {
      // The condition's own statements (loads) run at the top of every iteration: while (true) { pre; if (!c) break; body }.
      const b = this.block(() => {
        const c = cond();
        this.emit({ s: "if", cond: c.not().expr, then: [{ s: "break" }], else: [] });
        body();
      });
      this.emit({ s: "while", cond: literal(this, "bool", true), body: b });
    }
    this.loopDepth--;
  };
  /** Leaves the innermost loop. */ break_ = (): void => this.emit({ s: "break" });
  /** Next iteration of the innermost loop. */ continue_ = (): void => this.emit({ s: "continue" });
  /** Ends this thread. */ return_ = (): void => this.emit({ s: "return" });
  /** Workgroup barrier (execution + workgroup/global memory). */ barrier = (): void => this.emit({ s: "barrier" });

  // ── expressions ──
  private call<T extends ValueType>(fn: MathFn, args: readonly Val<T>[]): Val<T> {
    const t = (args[0] as Val<T>).type;
    return new Val({ k: "call", type: t, fn, args: args.map((a) => this.coerce(a, t)) }, t, this);
  }
  /** e^x */ exp = <T extends ValueType>(x: Val<T>): Val<T> => this.call("exp", [x]);
  /** ln x */ log = <T extends ValueType>(x: Val<T>): Val<T> => this.call("log", [x]);
  /** √x */ sqrt = <T extends ValueType>(x: Val<T>): Val<T> => this.call("sqrt", [x]);
  /** 1/√x */ rsqrt = <T extends ValueType>(x: Val<T>): Val<T> => this.call("rsqrt", [x]);
  /** tanh x */ tanh = <T extends ValueType>(x: Val<T>): Val<T> => this.call("tanh", [x]);
  /** erf x */ erf = <T extends ValueType>(x: Val<T>): Val<T> => this.call("erf", [x]);
  /** sin x */ sin = <T extends ValueType>(x: Val<T>): Val<T> => this.call("sin", [x]);
  /** cos x */ cos = <T extends ValueType>(x: Val<T>): Val<T> => this.call("cos", [x]);
  /** floor x */ floor = <T extends ValueType>(x: Val<T>): Val<T> => this.call("floor", [x]);
  /** |x| */ abs = <T extends ValueType>(x: Val<T>): Val<T> => this.call("abs", [x]);
  /** min(a, b) */ min = <T extends ValueType>(a: Val<T>, b: Val<T>): Val<T> => this.call("min", [a, b]);
  /** max(a, b) */ max = <T extends ValueType>(a: Val<T>, b: Val<T>): Val<T> => this.call("max", [a, b]);
  /** a*b+c, rounded once */ fma = <T extends ValueType>(a: Val<T>, b: Val<T>, c: Val<T>): Val<T> =>
    this.call("fma", [a, b, c]);
  /**
   * `acc + Σ_k u8(a, k) · i8(b, k)` per lane over the four packed bytes of each u32 (decision 2320): i32 from u32
   * operands, or vec4/vec8/vec16<i32> from vec4/vec8/vec16<u32> (the wide ones: decision 2330).
   */
  dot4U8I8 = <T extends Dot4Acc>(acc: Val<T>, a: Val<Dot4Operand<T>>, b: Val<Dot4Operand<T>>): Val<T> =>
    new Val({ k: "call", type: acc.type, fn: "dot4U8I8", args: [acc.expr, a.expr, b.expr] }, acc.type, this);
  /** `cond ? a : b` (both evaluated). */
  select = <T extends ValueType>(cond: Val<"bool">, a: Val<T>, b: Val<T> | number): Val<T> =>
    new Val({ k: "select", type: a.type, cond: cond.expr, a: a.expr, b: this.coerce(b, a.type) }, a.type, this);
  /** Builds a vector from scalars. */
  vec = <T extends VecType>(type: T, ...elems: Val[]): Val<T> =>
    new Val({ k: "vec", type, elems: elems.map((e) => e.expr) }, type, this);
  /** Packs f32 (pair) into 16-bit float bits in a u32, round-to-nearest-even. */
  pack = (fmt: PackFormat, v: Val<"f32"> | Val<"vec2<f32>">): Val<"u32"> =>
    new Val({ k: "pack", type: "u32", fmt, a: v.expr }, "u32", this);
  /** Unpacks 16-bit float bits from a u32 into f32 (bf16/f16) or vec2<f32> (bf16x2/f16x2). */
  unpack = <F extends PackFormat>(fmt: F, v: Val<"u32">): Val<F extends "bf16x2" | "f16x2" ? "vec2<f32>" : "f32"> => {
    const type = (fmt === "bf16x2" || fmt === "f16x2" ? "vec2<f32>" : "f32") as F extends "bf16x2" | "f16x2"
      ? "vec2<f32>"
      : "f32";
    return new Val({ k: "unpack", type, fmt, a: v.expr }, type, this);
  };

  // ── subgroups ──
  private sg<T extends ValueType>(op: SubgroupOp, v: Val<T>, lane?: Index): Val<T> {
    const name = this.fresh(`sg_${op}`);
    this.emit({
      s: "subgroup",
      name,
      type: v.type,
      op,
      value: v.expr,
      ...(lane === undefined ? {} : { lane: this.idx(lane) }),
    });
    return new Val({ k: "local", type: v.type, name }, v.type, this);
  }
  /** Sum over the subgroup. */ subgroupAdd = <T extends ValueType>(v: Val<T>): Val<T> => this.sg("reduce_add", v);
  /** Max over the subgroup. */ subgroupMax = <T extends ValueType>(v: Val<T>): Val<T> => this.sg("reduce_max", v);
  /** Min over the subgroup. */ subgroupMin = <T extends ValueType>(v: Val<T>): Val<T> => this.sg("reduce_min", v);
  /** `v` from lane `lane` (uniform). */ broadcast = <T extends ValueType>(v: Val<T>, lane: Index): Val<T> =>
    this.sg("broadcast", v, lane);
  /** `v` from lane `lane_id ^ mask`. */ shuffleXor = <T extends ValueType>(v: Val<T>, mask: Index): Val<T> =>
    this.sg("shuffle_xor", v, mask);
  /** `v` from lane `src`. */ shuffle = <T extends ValueType>(v: Val<T>, src: Index): Val<T> =>
    this.sg("shuffle_idx", v, src);

  /**
   * Warp-scope matrix multiply-accumulate m16n8k16 (see the `mma` statement): this lane's A fragment (`vec4<u32>` of
   * packed `input` pairs), B fragment (`vec2<u32>`) and f32 accumulator (`vec4<f32>`); returns this lane's D fragment.
   * Every lane of a 32-lane subgroup must reach it together. `shape` picks another layout (`MMA_LAYOUTS`): the AMD
   * `m16n8k16_wmma` has the same operand types; `m16n16k16_mfma` takes `vec2<u32>` A (see `mmaOperandTypes`).
   */
  mma = (
    input: MmaInput,
    a: Val<"vec4<u32>"> | Val<"vec2<u32>"> | Val<"vec2<u32>" | "vec4<u32>">,
    b: Val<"vec2<u32>"> | Val<"vec4<u32>"> | Val<"vec2<u32>" | "vec4<u32>">,
    c: Val<"vec4<f32>">,
    shape: MmaShape = "m16n8k16",
  ): Val<"vec4<f32>"> => {
    const name = this.fresh("mma");
    this.emit({ s: "mma", name, shape, input, a: a.expr, b: b.expr, c: c.expr });
    return new Val({ k: "local", type: "vec4<f32>", name }, "vec4<f32>", this);
  };

  /** @internal */ finish(): Stmt[] {
    if (this.blocks.length !== 1) throw new KernelDslError(this.kernelName, "unbalanced blocks");
    return this.blocks[0] as Stmt[];
  }
}

/**
 * Builds a kernel: `body` receives the builder (destructure what you use) and emits statements in call
 * order. Throws `KernelDslError` on misuse and `KernelValidationError` if the result is invalid.
 */
export function kernel(name: string, options: KernelOptions, body: (k: Builder) => void): Kernel {
  const specs = Object.entries(options.specs ?? {}).map(([n, d]) =>
    d === undefined ? { name: n } : { name: n, default: d },
  );
  const b = new Builder(
    name,
    specs.map((s) => s.name),
  );
  body(b);
  const k: Kernel = {
    name,
    workgroupSize: options.workgroupSize,
    specs,
    buffers: b.decl.buffers,
    uniforms: b.decl.uniforms,
    shared: b.decl.shared,
    body: b.finish(),
  };
  return assertValidKernel(k);
}

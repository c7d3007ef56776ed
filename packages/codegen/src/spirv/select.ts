// SPIR-V instruction selection: a RegTarget whose operands are result ids. One 32-bit integer type serves
// both i32 and u32 (SPIR-V signedness lives in the opcode), so i32 <-> u32 casts are free.

import { elemOf, lanesOf, type ValueType } from "@poot/kernel-dsl";
import type { RegTarget } from "../common/regs.js";
import { SpirvMemory } from "./memory.js";
import { GLSL, GroupOperation, Op, Scope, StorageClass } from "./spec.js";

/** Emission state of one SPIR-V kernel. */
export class SpirvEmitter extends SpirvMemory implements RegTarget<number> {
  readonly params = new Map<string, { readonly ptr: number; readonly type: ValueType }>();
  readonly builtins = new Map<string, number>();
  private readonly vars = new Map<string, number>();
  private readonly loops: { merge: number; cont: number }[] = [];

  constant(type: ValueType, value: number | boolean): number {
    if (type === "bool") return this.m.bool(Boolean(value));
    return type === "f32" ? this.m.f32(Number(value)) : this.u(Number(value) | 0);
  }

  builtin(name: string, axis: 0 | 1 | 2 | undefined): number {
    const ptr = this.builtins.get(name);
    if (ptr === undefined) return this.unsupported(`builtin ${name}`);
    if (name === "subgroup_id")
      return this.op(Op.UDiv, "u32", this.builtin("local_index", undefined), this.u(this.subgroupSize));
    const isVec = name === "global_id" || name === "local_id" || name === "workgroup_id" || name === "num_workgroups";
    if (!isVec) return this.op(Op.Load, "u32", ptr);
    // The IR has no vec3; load the uvec3 builtin and take one component.
    const v = this.fn.op(Op.Load, this.m.typeVector(this.m.typeInt(32, false), 3), ptr);
    return this.op(Op.CompositeExtract, "u32", v, axis ?? 0);
  }

  param(name: string): number {
    const p = this.params.get(name)!;
    return this.op(Op.Load, p.type, p.ptr);
  }

  unary(op: string, type: ValueType, a: number): number {
    if (op === "neg") return this.op(elemOf(type) === "f32" ? Op.FNegate : Op.SNegate, type, a);
    return this.op(type === "bool" ? Op.LogicalNot : Op.Not, type, a);
  }

  binary(op: string, type: ValueType, a: number, b: number): number {
    const e = elemOf(type);
    const f = e === "f32";
    const s = e === "i32";
    const bool = e === "bool";
    switch (op) {
      case "add":
        return this.op(f ? Op.FAdd : Op.IAdd, type, a, b);
      case "sub":
        return this.op(f ? Op.FSub : Op.ISub, type, a, b);
      case "mul":
        return this.op(f ? Op.FMul : Op.IMul, type, a, b);
      case "div":
        return this.op(f ? Op.FDiv : s ? Op.SDiv : Op.UDiv, type, a, b);
      case "rem":
        return this.op(f ? Op.FRem : s ? Op.SRem : Op.UMod, type, a, b);
      case "and":
        return this.op(bool ? Op.LogicalAnd : Op.BitwiseAnd, type, a, b);
      case "or":
        return this.op(bool ? Op.LogicalOr : Op.BitwiseOr, type, a, b);
      case "xor":
        return this.op(bool ? Op.LogicalNotEqual : Op.BitwiseXor, type, a, b);
      case "shl":
      case "shr": {
        const c = this.op(Op.BitwiseAnd, type, b, this.splat(type, this.u(31)));
        return this.op(
          op === "shl" ? Op.ShiftLeftLogical : s ? Op.ShiftRightArithmetic : Op.ShiftRightLogical,
          type,
          a,
          c,
        );
      }
      default:
        return this.unsupported(`binary ${op}`);
    }
  }

  cmp(op: string, operand: ValueType, a: number, b: number): number {
    const e = elemOf(operand);
    const table: Record<string, readonly [number, number, number, number]> = {
      // [f32, i32, u32, bool]
      eq: [Op.FOrdEqual, Op.IEqual, Op.IEqual, Op.LogicalEqual],
      ne: [Op.FUnordNotEqual, Op.INotEqual, Op.INotEqual, Op.LogicalNotEqual],
      lt: [Op.FOrdLessThan, Op.SLessThan, Op.ULessThan, -1],
      le: [Op.FOrdLessThanEqual, Op.SLessThanEqual, Op.ULessThanEqual, -1],
      gt: [Op.FOrdGreaterThan, Op.SGreaterThan, Op.UGreaterThan, -1],
      ge: [Op.FOrdGreaterThanEqual, Op.SGreaterThanEqual, Op.UGreaterThanEqual, -1],
    };
    const code = table[op]![e === "f32" ? 0 : e === "i32" ? 1 : e === "u32" ? 2 : 3];
    if (code < 0) return this.unsupported(`ordering comparison on bool`);
    return this.op(code, "bool", a, b);
  }

  select(type: ValueType, cond: number, a: number, b: number): number {
    return this.op(Op.Select, type, cond, a, b);
  }

  call(fn: string, type: ValueType, args: readonly number[]): number {
    const e = elemOf(type);
    const [x, y, z] = args as [number, number, number];
    switch (fn) {
      case "exp":
        return this.ext(GLSL.Exp, type, x);
      case "log":
        return this.ext(GLSL.Log, type, x);
      case "sqrt":
        return this.ext(GLSL.Sqrt, type, x);
      case "rsqrt":
        return this.ext(GLSL.InverseSqrt, type, x);
      case "tanh":
        return this.ext(GLSL.Tanh, type, x);
      case "sin":
        return this.ext(GLSL.Sin, type, x);
      case "cos":
        return this.ext(GLSL.Cos, type, x);
      case "floor":
        return this.ext(GLSL.Floor, type, x);
      case "fma":
        return this.ext(GLSL.Fma, type, x, y, z);
      case "abs":
        return e === "f32" ? this.ext(GLSL.FAbs, type, x) : e === "i32" ? this.ext(GLSL.SAbs, type, x) : x;
      case "min":
        return this.ext(e === "f32" ? GLSL.NMin : e === "i32" ? GLSL.SMin : GLSL.UMin, type, x, y);
      case "max":
        return this.ext(e === "f32" ? GLSL.NMax : e === "i32" ? GLSL.SMax : GLSL.UMax, type, x, y);
      case "erf": {
        // Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), odd extension via sign(x).
        const f = (v: number): number => this.m.f32(v);
        const ax = this.ext(GLSL.FAbs, "f32", x);
        const t = this.op(Op.FDiv, "f32", f(1), this.ext(GLSL.Fma, "f32", ax, f(0.3275911), f(1)));
        let p = f(1.061405429);
        for (const c of [-1.453152027, 1.421413741, -0.284496736, 0.254829592])
          p = this.ext(GLSL.Fma, "f32", p, t, f(c));
        p = this.op(Op.FMul, "f32", p, t);
        const ex = this.ext(GLSL.Exp, "f32", this.op(Op.FNegate, "f32", this.op(Op.FMul, "f32", ax, ax)));
        const r = this.op(Op.FSub, "f32", f(1), this.op(Op.FMul, "f32", p, ex));
        return this.op(Op.Select, "f32", this.op(Op.FOrdLessThan, "bool", x, f(0)), this.op(Op.FNegate, "f32", r), r);
      }
      default:
        return this.unsupported(`math ${fn}`);
    }
  }

  cast(from: ValueType, to: ValueType, a: number): number {
    const fe = elemOf(from);
    const te = elemOf(to);
    if (fe === te || (fe !== "f32" && te !== "f32" && fe !== "bool" && te !== "bool")) return a;
    if (te === "bool")
      return fe === "f32"
        ? this.op(Op.FUnordNotEqual, to, a, this.splat(from, this.m.f32(0)))
        : this.op(Op.INotEqual, to, a, this.splat(from, this.u(0)));
    if (fe === "bool")
      return this.op(Op.Select, to, a, this.splat(to, this.constant(te, 1)), this.splat(to, this.constant(te, 0)));
    if (fe === "f32") {
      // Vulkan leaves out-of-range conversions undefined: clamp first and map NaN to 0 (IR semantics).
      const lo = te === "i32" ? -2147483648 : 0;
      const hi = te === "i32" ? 2147483520 : 4294967040;
      const c = this.ext(
        GLSL.NMin,
        from,
        this.ext(GLSL.NMax, from, a, this.splat(from, this.m.f32(lo))),
        this.splat(from, this.m.f32(hi)),
      );
      const conv = this.op(te === "i32" ? Op.ConvertFToS : Op.ConvertFToU, to, c);
      const boolT = lanesOf(from) > 1 ? this.m.typeVector(this.m.typeBool(), lanesOf(from)) : this.m.typeBool();
      // At or above 2^31 (2^32) the clamp lands on the largest f32 below it; saturate to the integer maximum.
      const over = this.fn.op(
        Op.FOrdGreaterThanEqual,
        boolT,
        a,
        this.splat(from, this.m.f32(te === "i32" ? 2147483648 : 4294967296)),
      );
      const sat = this.op(Op.Select, to, over, this.splat(to, this.u(te === "i32" ? 0x7fffffff : 0xffffffff)), conv);
      const nan = this.fn.op(Op.IsNan, boolT, a);
      return this.op(Op.Select, to, nan, this.splat(to, this.u(0)), sat);
    }
    return this.op(fe === "i32" ? Op.ConvertSToF : Op.ConvertUToF, to, a);
  }

  bitcast(from: ValueType, to: ValueType, a: number): number {
    return this.type(from) === this.type(to) ? a : this.op(Op.Bitcast, to, a);
  }

  pack(fmt: string, a: number): number {
    if (fmt === "f16x2") return this.ext(GLSL.PackHalf2x16, "u32", a);
    if (fmt === "f16")
      return this.ext(GLSL.PackHalf2x16, "u32", this.op(Op.CompositeConstruct, "vec2<f32>", a, this.m.f32(0)));
    if (fmt === "bf16") return this.bf16Bits(a);
    const lo = this.bf16Bits(this.op(Op.CompositeExtract, "f32", a, 0));
    const hi = this.bf16Bits(this.op(Op.CompositeExtract, "f32", a, 1));
    return this.op(Op.BitwiseOr, "u32", lo, this.op(Op.ShiftLeftLogical, "u32", hi, this.u(16)));
  }

  unpack(fmt: string, type: ValueType, a: number): number {
    if (fmt === "f16x2") return this.ext(GLSL.UnpackHalf2x16, "vec2<f32>", a);
    if (fmt === "f16") return this.op(Op.CompositeExtract, "f32", this.ext(GLSL.UnpackHalf2x16, "vec2<f32>", a), 0);
    const lo = this.op(Op.Bitcast, "f32", this.op(Op.ShiftLeftLogical, "u32", a, this.u(16)));
    if (type === "f32") return lo;
    const hi = this.op(Op.Bitcast, "f32", this.op(Op.BitwiseAnd, "u32", a, this.u(0xffff0000)));
    return this.op(Op.CompositeConstruct, "vec2<f32>", lo, hi);
  }

  vec(type: ValueType, elems: readonly number[]): number {
    return this.op(Op.CompositeConstruct, type, ...elems);
  }

  extract(vecType: ValueType, lane: number, a: number): number {
    return this.op(Op.CompositeExtract, elemOf(vecType), a, lane);
  }

  subgroup(op: string, type: ValueType, value: number, lane: number | undefined): number {
    const sg = this.u(Scope.Subgroup);
    const e = elemOf(type);
    switch (op) {
      case "reduce_add":
        return this.op(
          e === "f32" ? Op.GroupNonUniformFAdd : Op.GroupNonUniformIAdd,
          type,
          sg,
          GroupOperation.Reduce,
          value,
        );
      case "reduce_max":
        return this.op(
          e === "f32" ? Op.GroupNonUniformFMax : e === "i32" ? Op.GroupNonUniformSMax : Op.GroupNonUniformUMax,
          type,
          sg,
          GroupOperation.Reduce,
          value,
        );
      case "reduce_min":
        return this.op(
          e === "f32" ? Op.GroupNonUniformFMin : e === "i32" ? Op.GroupNonUniformSMin : Op.GroupNonUniformUMin,
          type,
          sg,
          GroupOperation.Reduce,
          value,
        );
      case "broadcast":
      case "shuffle_idx":
        return this.op(Op.GroupNonUniformShuffle, type, sg, value, lane!);
      case "shuffle_xor":
        return this.op(Op.GroupNonUniformShuffleXor, type, sg, value, lane!);
      default:
        return this.unsupported(`subgroup ${op}`);
    }
  }

  newVar(name: string, type: ValueType, init: number): void {
    const v = this.fn.localVariable(this.m.typePointer(StorageClass.Function, this.type(type)));
    this.vars.set(name, v);
    this.stmt(Op.Store, v, init);
  }
  readVar(name: string, type: ValueType): number {
    return this.op(Op.Load, type, this.vars.get(name)!);
  }
  writeVar(name: string, _type: ValueType, v: number): void {
    this.stmt(Op.Store, this.vars.get(name)!, v);
  }
  ifElse(cond: number, then: () => void, otherwise: (() => void) | undefined): void {
    this.fn.ensureOpen();
    this.fn.ifThen(cond, then, otherwise);
  }
  loop(cond: () => number, body: () => void, step: () => void): void {
    this.fn.ensureOpen();
    this.fn.loop(
      cond,
      (labels) => {
        this.loops.push(labels);
        body();
        this.loops.pop();
      },
      () => step(),
    );
  }
  breakLoop(): void {
    this.fn.ensureOpen();
    this.fn.terminate(Op.Branch, this.loops[this.loops.length - 1]!.merge);
  }
  continueLoop(): void {
    this.fn.ensureOpen();
    this.fn.terminate(Op.Branch, this.loops[this.loops.length - 1]!.cont);
  }
  ret(): void {
    this.fn.ensureOpen();
    this.fn.terminate(Op.Return);
  }
  /** Workgroup size, for the execution mode. */
  get workgroupSize(): readonly [number, number, number] {
    return this.wg;
  }
}

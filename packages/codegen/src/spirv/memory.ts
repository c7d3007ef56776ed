// SPIR-V memory access and id plumbing for instruction selection: type ids, instructions, constants, array
// pointers (buffers in Block structs, narrow elements through 32-bit words), loads and stores, atomics, barriers.

import { elemOf, lanesOf, type ElemType, type ValueType } from "@poot/kernel-dsl";
import { CodegenError } from "../errors.js";
import type { SpirvFunction } from "./function.js";
import type { SpirvModule } from "./module.js";
import { GLSL, MemorySemantics, Op, Scope, StorageClass } from "./spec.js";

/** How the emitter reaches one array: a pointer to its first element's containing object. */
export interface SpirvArray {
  /** Variable id. */
  readonly variable: number;
  readonly storageClass: number;
  /** Element type id as stored. */
  readonly storedType: number;
  /** Storage elem of the IR. */
  readonly elem: ElemType;
  /** Whether the array sits in member 0 of a Block struct (buffers) rather than being the variable. */
  readonly inBlock: boolean;
  /** Narrow elements reached through 32-bit words (no 16-bit storage). */
  readonly words: boolean;
}

/** The memory half of SPIR-V instruction selection (SpirvEmitter adds arithmetic, conversions and control flow). */
export abstract class SpirvMemory {
  readonly arrays = new Map<string, SpirvArray>();
  protected readonly glsl: number;

  constructor(
    protected readonly m: SpirvModule,
    readonly fn: SpirvFunction,
    protected readonly kernel: string,
    protected readonly subgroupSize: number,
    protected readonly wg: readonly [number, number, number],
  ) {
    this.glsl = m.extInstImport("GLSL.std.450");
  }

  /** Type id of an IR value type. */
  type(t: ValueType | ElemType): number {
    const m = this.m;
    const n = lanesOf(t);
    const e = n > 1 ? elemOf(t as ValueType) : t;
    const s =
      e === "bool"
        ? m.typeBool()
        : e === "f32"
          ? m.typeFloat(32)
          : e === "f16"
            ? m.typeFloat(16)
            : e === "bf16"
              ? m.typeInt(16, false)
              : m.typeInt(32, false);
    return n > 1 ? m.typeVector(s, n) : s;
  }

  protected op(opcode: number, t: ValueType, ...operands: number[]): number {
    this.fn.ensureOpen();
    return this.fn.op(opcode, this.type(t), ...operands);
  }

  protected ext(inst: number, t: ValueType, ...operands: number[]): number {
    this.fn.ensureOpen();
    return this.fn.ext(this.glsl, this.type(t), inst, ...operands);
  }

  protected stmt(opcode: number, ...operands: number[]): void {
    this.fn.ensureOpen();
    this.fn.stmt(opcode, ...operands);
  }

  protected unsupported(what: string): never {
    throw new CodegenError("unsupported", `SPIR-V lowering cannot express ${what}`, {
      kernel: this.kernel,
      target: "spirv",
      construct: what,
    });
  }

  protected u(v: number): number {
    return this.m.u32(v);
  }

  protected splat(t: ValueType, scalar: number): number {
    return lanesOf(t) > 1
      ? this.m.constantComposite(
          this.type(t),
          Array.from({ length: lanesOf(t) }, () => scalar),
        )
      : scalar;
  }

  protected pointer(array: string, index: number): { ptr: number; a: SpirvArray } {
    const a = this.arrays.get(array)!;
    const ptrType = this.m.typePointer(a.storageClass, a.storedType);
    this.fn.ensureOpen();
    const ptr = a.inBlock
      ? this.fn.op(Op.AccessChain, ptrType, a.variable, this.u(0), index)
      : this.fn.op(Op.AccessChain, ptrType, a.variable, index);
    return { ptr, a };
  }

  load(_space: string, array: string, elem: ElemType, index: number, type: ValueType): number {
    const a = this.arrays.get(array)!;
    if (a.words) {
      // Narrow element inside a 32-bit word: shift it down (and sign-extend i8 with an arithmetic shift).
      const per = elem === "u8" || elem === "i8" ? 4 : 2;
      const bits = 32 / per;
      const w = this.op(
        Op.Load,
        "u32",
        this.pointer(array, this.op(Op.ShiftRightLogical, "u32", index, this.u(per === 4 ? 2 : 1))).ptr,
      );
      const sh = this.op(Op.IMul, "u32", this.op(Op.BitwiseAnd, "u32", index, this.u(per - 1)), this.u(bits));
      if (elem === "bf16")
        return this.op(
          Op.Bitcast,
          "f32",
          this.op(Op.ShiftLeftLogical, "u32", this.op(Op.ShiftRightLogical, "u32", w, sh), this.u(16)),
        );
      if (elem === "f16")
        return this.op(
          Op.VectorExtractDynamic,
          "f32",
          this.ext(GLSL.UnpackHalf2x16, "vec2<f32>", w),
          this.op(Op.BitwiseAnd, "u32", index, this.u(1)),
        );
      if (elem === "u8") return this.op(Op.BitwiseAnd, "u32", this.op(Op.ShiftRightLogical, "u32", w, sh), this.u(255));
      const up = this.op(Op.ShiftLeftLogical, "u32", w, this.op(Op.ISub, "u32", this.u(24), sh));
      return this.op(Op.ShiftRightArithmetic, "i32", up, this.u(24));
    }
    const { ptr } = this.pointer(array, index);
    const raw = this.fn.op(Op.Load, a.storedType, ptr);
    if (elem === "f16") return this.op(Op.FConvert, "f32", raw);
    if (elem === "bf16")
      return this.op(
        Op.Bitcast,
        "f32",
        this.op(Op.ShiftLeftLogical, "u32", this.op(Op.UConvert, "u32", raw), this.u(16)),
      );
    void type;
    return raw;
  }

  store(_space: string, array: string, elem: ElemType, index: number, value: number): void {
    const a = this.arrays.get(array)!;
    if (a.words) {
      // Neighbouring elements share the word with other invocations: clear, then set only this element's bits.
      const per = elem === "u8" || elem === "i8" ? 4 : 2;
      const bits = 32 / per;
      const mask = per === 4 ? 0xff : 0xffff;
      const w = this.pointer(array, this.op(Op.ShiftRightLogical, "u32", index, this.u(per === 4 ? 2 : 1))).ptr;
      const sh = this.op(Op.IMul, "u32", this.op(Op.BitwiseAnd, "u32", index, this.u(per - 1)), this.u(bits));
      const raw =
        elem === "bf16"
          ? this.bf16Bits(value)
          : elem === "f16"
            ? this.ext(GLSL.PackHalf2x16, "u32", this.op(Op.CompositeConstruct, "vec2<f32>", value, this.m.f32(0)))
            : value;
      const field = this.op(Op.ShiftLeftLogical, "u32", this.op(Op.BitwiseAnd, "u32", raw, this.u(mask)), sh);
      const keep = this.op(Op.Not, "u32", this.op(Op.ShiftLeftLogical, "u32", this.u(mask), sh));
      const scope = this.u(Scope.Device);
      const relaxed = this.u(MemorySemantics.None);
      this.op(Op.AtomicAnd, "u32", w, scope, relaxed, keep);
      this.op(Op.AtomicOr, "u32", w, scope, relaxed, field);
      return;
    }
    const { ptr } = this.pointer(array, index);
    let v = value;
    if (elem === "f16") v = this.fn.op(Op.FConvert, a.storedType, value);
    else if (elem === "bf16") v = this.fn.op(Op.UConvert, a.storedType, this.bf16Bits(value));
    this.stmt(Op.Store, ptr, v);
  }

  /** f32 -> bf16 bits in a u32, round to nearest even, NaN kept quiet. */
  protected bf16Bits(f: number): number {
    const b = this.op(Op.Bitcast, "u32", f);
    const hi = this.op(Op.ShiftRightLogical, "u32", b, this.u(16));
    const odd = this.op(Op.BitwiseAnd, "u32", hi, this.u(1));
    const r = this.op(
      Op.ShiftRightLogical,
      "u32",
      this.op(Op.IAdd, "u32", this.op(Op.IAdd, "u32", b, this.u(0x7fff)), odd),
      this.u(16),
    );
    const q = this.op(Op.BitwiseOr, "u32", hi, this.u(0x40));
    return this.op(Op.Select, "u32", this.op(Op.IsNan, "bool", f), q, r);
  }

  atomic(
    op: string,
    type: "u32" | "i32" | "f32",
    space: "global" | "workgroup",
    array: string,
    index: number,
    value: number | undefined,
    compare: number | undefined,
  ): number | undefined {
    const { ptr } = this.pointer(array, index);
    const scope = this.u(space === "global" ? Scope.Device : Scope.Workgroup);
    const relaxed = this.u(MemorySemantics.None);
    const rmw = (code: number): number => this.op(code, "u32", ptr, scope, relaxed, value!);
    if (type === "f32") {
      if (op !== "add") return this.unsupported(`f32 atomic ${op}`);
      // Portable f32 add: compare-exchange on the bit pattern until no other thread intervened.
      const old = this.fn.localVariable(this.m.typePointer(StorageClass.Function, this.type("u32")));
      this.stmt(Op.Store, old, this.op(Op.AtomicLoad, "u32", ptr, scope, relaxed));
      let result = 0;
      this.fn.loop(
        () => this.m.bool(true),
        ({ merge }) => {
          const seen = this.op(Op.Load, "u32", old);
          const next = this.op(Op.Bitcast, "u32", this.op(Op.FAdd, "f32", this.op(Op.Bitcast, "f32", seen), value!));
          const got = this.op(Op.AtomicCompareExchange, "u32", ptr, scope, relaxed, relaxed, next, seen);
          this.stmt(Op.Store, old, got);
          this.fn.ifThen(this.op(Op.IEqual, "bool", got, seen), () => this.fn.terminate(Op.Branch, merge));
        },
        () => {},
      );
      result = this.op(Op.Bitcast, "f32", this.op(Op.Load, "u32", old));
      return result;
    }
    const s = type === "i32";
    switch (op) {
      case "add":
        return rmw(Op.AtomicIAdd);
      case "max":
        return rmw(s ? Op.AtomicSMax : Op.AtomicUMax);
      case "min":
        return rmw(s ? Op.AtomicSMin : Op.AtomicUMin);
      case "exchange":
        return rmw(Op.AtomicExchange);
      case "cmpxchg":
        return this.op(Op.AtomicCompareExchange, "u32", ptr, scope, relaxed, relaxed, value!, compare!);
      case "load":
        return this.op(Op.AtomicLoad, "u32", ptr, scope, relaxed);
      case "store":
        this.stmt(Op.AtomicStore, ptr, scope, relaxed, value!);
        return undefined;
      default:
        return this.unsupported(`atomic ${op}`);
    }
  }

  barrier(): void {
    const sem = MemorySemantics.AcquireRelease | MemorySemantics.WorkgroupMemory | MemorySemantics.UniformMemory;
    this.stmt(Op.ControlBarrier, this.u(Scope.Workgroup), this.u(Scope.Workgroup), this.u(sem));
  }

  privateArray(name: string, elem: ValueType, length: number): void {
    const arr = this.m.typeArray(this.type(elem), length);
    // OpConstantNull initializer: private arrays start as zero (IR semantics).
    const v = this.fn.localVariable(this.m.typePointer(StorageClass.Function, arr), this.m.constantNull(arr));
    this.arrays.set(name, {
      variable: v,
      storageClass: StorageClass.Function,
      storedType: this.type(elem),
      elem: elem as ElemType,
      inBlock: false,
      words: false,
    });
  }
}

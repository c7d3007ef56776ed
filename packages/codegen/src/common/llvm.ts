// The LLVM IR instruction selection every LLVM target shares (AMDGPU, x86-64): SSA values, allocas for variables,
// structured control flow as basic blocks; a target supplies its address spaces, builtins, subgroups and barriers.

import { elemOf, lanesOf, type ElemType, type SubgroupOp, type ValueType } from "@poot/kernel-dsl";
import type { TargetName } from "../caps.js";
import type { RegTarget } from "./regs.js";
import { CodegenError } from "../errors.js";
import { llvmMathCall, type LlvmMathSink } from "./llvm-math.js";
import { llFloat, llType } from "./llvm-types.js";

/** Emission state of one kernel as one LLVM function; subclasses add the target's builtins, subgroups and barrier. */
export abstract class LlvmEmitter implements RegTarget<string> {
  readonly lines: string[] = [];
  readonly entry: string[] = [];
  readonly declares = new Set<string>();
  private n = 0;
  protected open = true;
  private readonly loops: { cont: string; exit: string }[] = [];
  readonly paramVal = new Map<string, string>();
  private readonly mathSink: LlvmMathSink = {
    def: (rhs) => this.def(rhs),
    declare: (line) => void this.declares.add(line),
    unsupported: (what) => this.unsupported(what),
  };

  /**
   * @param kernel - the kernel's name (for errors)
   * @param target - the target's name (for errors)
   * @param spaces - the LLVM address space of each IR address space (`global`, `workgroup`, `private`)
   * @param scopes - the `syncscope` of global and workgroup atomics ("" for the system scope)
   */
  constructor(
    protected readonly kernel: string,
    protected readonly target: TargetName,
    private readonly spaces: Readonly<Record<"global" | "workgroup" | "private", number>>,
    private readonly scopes: Readonly<Record<"global" | "workgroup", string>>,
  ) {}

  abstract builtin(name: string, axis: 0 | 1 | 2 | undefined): string;
  abstract subgroup(op: SubgroupOp, type: ValueType, value: string, lane: string | undefined): string;
  abstract barrier(): void;

  protected tmp(): string {
    return `%v${++this.n}`;
  }
  protected label(prefix: string): string {
    return `${prefix}${++this.n}`;
  }
  emit(line: string): void {
    if (!this.open) this.startBlock(this.label("dead"));
    this.lines.push(`  ${line}`);
  }
  /** Emits `%vN = rhs` and returns `%vN`. */
  protected def(rhs: string): string {
    const t = this.tmp();
    this.emit(`${t} = ${rhs}`);
    return t;
  }
  protected terminate(line: string): void {
    this.emit(line);
    this.open = false;
  }
  protected startBlock(name: string): void {
    if (this.open) this.lines.push(`  br label %${name}`);
    this.lines.push(`${name}:`);
    this.open = true;
  }
  protected intrinsic(decl: string, call: string): string {
    this.declares.add(decl);
    return this.def(call);
  }
  protected unsupported(what: string): never {
    throw new CodegenError("unsupported", `${this.target} lowering cannot express ${what}`, {
      kernel: this.kernel,
      target: this.target,
      construct: what,
    });
  }

  constant(type: ValueType, value: number | boolean): string {
    if (type === "bool") return value ? "true" : "false";
    return type === "f32" ? llFloat(Number(value)) : String(Number(value) | 0);
  }

  param(name: string): string {
    return this.paramVal.get(name)!;
  }

  protected pointer(space: string, array: string, elem: ElemType, index: string): string {
    const i64 = this.def(`zext i32 ${index} to i64`);
    // Prefixed names cannot collide with the emitter's own %vN values and block labels.
    const base = space === "private" ? `%arr.${array}` : space === "workgroup" ? `@${array}` : `%buf.${array}`;
    return this.def(
      `getelementptr inbounds ${llType(elem)}, ptr addrspace(${this.spaces[space as "global"]}) ${base}, i64 ${i64}`,
    );
  }

  load(space: string, array: string, elem: ElemType, index: string, type: ValueType): string {
    const p = this.pointer(space, array, elem, index);
    const as = this.spaces[space as "global"];
    const align = elem === "bf16" || elem === "f16" ? 2 : elem === "u8" || elem === "i8" ? 1 : 4 * lanesOf(elem);
    const raw = this.def(`load ${llType(elem)}, ptr addrspace(${as}) ${p}, align ${align}`);
    switch (elem) {
      case "bf16":
        return this.def(`bitcast i32 ${this.def(`shl i32 ${this.def(`zext i16 ${raw} to i32`)}, 16`)} to float`);
      case "f16":
        return this.def(`fpext half ${raw} to float`);
      case "u8":
        return this.def(`zext i8 ${raw} to i32`);
      case "i8":
        return this.def(`sext i8 ${raw} to i32`);
      default:
        return type === elem ? raw : raw;
    }
  }

  store(space: string, array: string, elem: ElemType, index: string, value: string): void {
    const p = this.pointer(space, array, elem, index);
    const as = this.spaces[space as "global"];
    let v = value;
    if (elem === "bf16") v = this.def(`trunc i32 ${this.bf16Bits(value)} to i16`);
    else if (elem === "f16") v = this.def(`fptrunc float ${value} to half`);
    else if (elem === "u8" || elem === "i8") v = this.def(`trunc i32 ${value} to i8`);
    const align = elem === "bf16" || elem === "f16" ? 2 : elem === "u8" || elem === "i8" ? 1 : 4 * lanesOf(elem);
    this.emit(`store ${llType(elem)} ${v}, ptr addrspace(${as}) ${p}, align ${align}`);
  }

  /** f32 -> bf16 bits (low 16 of an i32), round to nearest even, NaN kept quiet. */
  protected bf16Bits(f: string): string {
    const b = this.def(`bitcast float ${f} to i32`);
    const odd = this.def(`and i32 ${this.def(`lshr i32 ${b}, 16`)}, 1`);
    const r = this.def(`lshr i32 ${this.def(`add i32 ${this.def(`add i32 ${b}, 32767`)}, ${odd}`)}, 16`);
    const q = this.def(`or i32 ${this.def(`lshr i32 ${b}, 16`)}, 64`);
    const nan = this.def(`fcmp uno float ${f}, 0.0`);
    return this.def(`select i1 ${nan}, i32 ${q}, i32 ${r}`);
  }

  unary(op: string, type: ValueType, a: string): string {
    const t = llType(type);
    if (op === "neg")
      return elemOf(type) === "f32"
        ? this.def(`fneg ${t} ${a}`)
        : this.def(`sub ${t} ${lanesOf(type) > 1 ? "zeroinitializer" : "0"}, ${a}`);
    return this.def(`xor ${t} ${a}, ${type === "bool" ? "true" : lanesOf(type) > 1 ? `splat (i32 -1)` : "-1"}`);
  }

  binary(op: string, type: ValueType, a: string, b: string): string {
    const t = llType(type);
    const e = elemOf(type);
    const f = e === "f32";
    const s = e === "i32";
    switch (op) {
      case "add":
        return this.def(`${f ? "fadd" : "add"} ${t} ${a}, ${b}`);
      case "sub":
        return this.def(`${f ? "fsub" : "sub"} ${t} ${a}, ${b}`);
      case "mul":
        return this.def(`${f ? "fmul" : "mul"} ${t} ${a}, ${b}`);
      case "div":
        return this.def(`${f ? "fdiv" : s ? "sdiv" : "udiv"} ${t} ${a}, ${b}`);
      case "rem":
        return this.def(`${f ? "frem" : s ? "srem" : "urem"} ${t} ${a}, ${b}`);
      case "and":
      case "or":
      case "xor":
        return this.def(`${op} ${t} ${a}, ${b}`);
      case "shl":
      case "shr": {
        // The IR takes shift counts mod 32; LLVM makes larger counts poison.
        const c = this.def(`and ${t} ${b}, ${lanesOf(type) > 1 ? "splat (i32 31)" : "31"}`);
        return this.def(`${op === "shl" ? "shl" : s ? "ashr" : "lshr"} ${t} ${a}, ${c}`);
      }
      default:
        return this.unsupported(`binary ${op}`);
    }
  }

  cmp(op: string, operand: ValueType, a: string, b: string): string {
    const e = elemOf(operand);
    if (e === "f32") {
      const pred = op === "ne" ? "une" : `o${op === "eq" ? "eq" : op}`;
      return this.def(`fcmp ${pred} float ${a}, ${b}`);
    }
    const pred = op === "eq" || op === "ne" ? op : `${e === "i32" ? "s" : "u"}${op}`;
    return this.def(`icmp ${pred} ${llType(operand)} ${a}, ${b}`);
  }

  select(type: ValueType, cond: string, a: string, b: string): string {
    const t = llType(type);
    return this.def(`select i1 ${cond}, ${t} ${a}, ${t} ${b}`);
  }

  /** A DSL math function (`exp`, `erf`, `min`, …) as LLVM intrinsics and arithmetic (llvm-math.ts). */
  call(fn: string, type: ValueType, args: readonly string[]): string {
    return llvmMathCall(this.mathSink, fn, type, args);
  }

  cast(from: ValueType, to: ValueType, a: string): string {
    const fe = elemOf(from);
    const te = elemOf(to);
    const ft = llType(from);
    const tt = llType(to);
    if (fe === te || (fe !== "f32" && te !== "f32" && fe !== "bool" && te !== "bool")) return a;
    if (te === "bool")
      return fe === "f32"
        ? this.def(`fcmp une ${ft} ${a}, ${lanesOf(from) > 1 ? "zeroinitializer" : "0.0"}`)
        : this.def(`icmp ne ${ft} ${a}, ${lanesOf(from) > 1 ? "zeroinitializer" : "0"}`);
    if (fe === "bool")
      return te === "f32" ? this.def(`uitofp ${ft} ${a} to ${tt}`) : this.def(`zext ${ft} ${a} to ${tt}`);
    if (fe === "f32") {
      // The saturating forms map NaN to 0 and clamp, as the IR requires.
      const name = te === "i32" ? "fptosi.sat" : "fptoui.sat";
      const sfx = lanesOf(to) > 1 ? `v${lanesOf(to)}i32.v${lanesOf(to)}f32` : "i32.f32";
      this.declares.add(`declare ${tt} @llvm.${name}.${sfx}(${ft})`);
      return this.def(`call ${tt} @llvm.${name}.${sfx}(${ft} ${a})`);
    }
    return this.def(`${fe === "i32" ? "sitofp" : "uitofp"} ${ft} ${a} to ${tt}`);
  }

  bitcast(from: ValueType, to: ValueType, a: string): string {
    return llType(from) === llType(to) ? a : this.def(`bitcast ${llType(from)} ${a} to ${llType(to)}`);
  }

  pack(fmt: string, a: string): string {
    const lanes = fmt.endsWith("x2") ? [this.extract("vec2<f32>", 0, a), this.extract("vec2<f32>", 1, a)] : [a];
    const bits = lanes.map((x) =>
      fmt.startsWith("bf16")
        ? this.bf16Bits(x)
        : this.def(`zext i16 ${this.def(`bitcast half ${this.def(`fptrunc float ${x} to half`)} to i16`)} to i32`),
    );
    return bits.length === 1 ? bits[0]! : this.def(`or i32 ${bits[0]}, ${this.def(`shl i32 ${bits[1]}, 16`)}`);
  }

  unpack(fmt: string, type: ValueType, a: string): string {
    const half = (w: string): string =>
      fmt.startsWith("bf16")
        ? this.def(`bitcast i32 ${this.def(`shl i32 ${w}, 16`)} to float`)
        : this.def(`fpext half ${this.def(`bitcast i16 ${this.def(`trunc i32 ${w} to i16`)} to half`)} to float`);
    const lo = half(a);
    if (type === "f32") return lo;
    const hi = half(this.def(`lshr i32 ${a}, 16`));
    return this.vec("vec2<f32>", [lo, hi]);
  }

  /** Where each `extractelement` this emitter defined came from: its vector, the vector's type and the lane. */
  private readonly extracted = new Map<
    string,
    { readonly src: string; readonly type: ValueType; readonly lane: number }
  >();

  /**
   * A vector of `elems`: one value in every lane as a splat (`insertelement` + `shufflevector`), lanes extracted from
   * at most two vectors of one type as one `shufflevector` (decision 2430: the slab GEMMs' broadcasts and register
   * transposes, which as chains of single-lane inserts made opt's input several times larger), else lane by lane.
   */
  vec(type: ValueType, elems: readonly string[]): string {
    const t = llType(type);
    const et = llType(elemOf(type));
    const n = elems.length;
    if (n > 1 && elems.every((x) => x === elems[0])) {
      const one = this.def(`insertelement ${t} poison, ${et} ${elems[0]}, i32 0`);
      return this.def(`shufflevector ${t} ${one}, ${t} poison, <${n} x i32> zeroinitializer`);
    }
    const from = elems.map((x) => this.extracted.get(x));
    const st = from[0]?.type;
    if (n > 1 && st !== undefined && llType(elemOf(st)) === et && from.every((f) => f?.type === st)) {
      const srcs = [...new Set(from.map((f) => f!.src))];
      if (srcs.length <= 2) {
        const mask = from.map((f) => `i32 ${(f!.src === srcs[0] ? 0 : lanesOf(st)) + f!.lane}`).join(", ");
        const s = llType(st);
        return this.def(`shufflevector ${s} ${srcs[0]}, ${s} ${srcs[1] ?? "poison"}, <${n} x i32> <${mask}>`);
      }
    }
    let v = "poison";
    elems.forEach((x, i) => {
      v = this.def(`insertelement ${t} ${v}, ${et} ${x}, i32 ${i}`);
    });
    return v;
  }

  extract(vecType: ValueType, lane: number, a: string): string {
    const v = this.def(`extractelement ${llType(vecType)} ${a}, i32 ${lane}`);
    this.extracted.set(v, { src: a, type: vecType, lane });
    return v;
  }

  atomic(
    op: string,
    type: "u32" | "i32" | "f32",
    space: "global" | "workgroup",
    array: string,
    index: string,
    value: string | undefined,
    compare: string | undefined,
  ): string | undefined {
    const p = this.pointer(space, array, type, index);
    const t = llType(type);
    const as = this.spaces[space as "global"];
    const sc = this.scopes[space];
    const scope = sc === "" ? "" : ` syncscope("${sc}")`;
    const rmw = (k: string): string =>
      this.def(`atomicrmw ${k} ptr addrspace(${as}) ${p}, ${t} ${value}${scope} monotonic, align 4`);
    switch (op) {
      case "add":
        return rmw(type === "f32" ? "fadd" : "add");
      case "max":
        return rmw(type === "i32" ? "max" : "umax");
      case "min":
        return rmw(type === "i32" ? "min" : "umin");
      case "exchange":
        return rmw("xchg");
      case "cmpxchg": {
        const pair = this.def(
          `cmpxchg ptr addrspace(${as}) ${p}, ${t} ${compare}, ${t} ${value}${scope} monotonic monotonic, align 4`,
        );
        return this.def(`extractvalue { ${t}, i1 } ${pair}, 0`);
      }
      case "load":
        return this.def(`load atomic ${t}, ptr addrspace(${as}) ${p}${scope} monotonic, align 4`);
      case "store":
        this.emit(`store atomic ${t} ${value}, ptr addrspace(${as}) ${p}${scope} monotonic, align 4`);
        return undefined;
      default:
        return this.unsupported(`atomic ${op}`);
    }
  }

  newVar(name: string, type: ValueType, init: string): void {
    this.entry.push(`  %${name}.addr = alloca ${llType(type)}, align 16, addrspace(${this.spaces.private})`);
    this.writeVar(name, type, init);
  }
  readVar(name: string, type: ValueType): string {
    return this.def(
      `load ${llType(type)}, ptr addrspace(${this.spaces.private}) %${name}.addr, align ${type === "bool" ? 1 : 4}`,
    );
  }
  writeVar(name: string, type: ValueType, v: string): void {
    this.emit(
      `store ${llType(type)} ${v}, ptr addrspace(${this.spaces.private}) %${name}.addr, align ${type === "bool" ? 1 : 4}`,
    );
  }
  privateArray(name: string, elem: ValueType, length: number): void {
    this.entry.push(
      `  %arr.${name} = alloca [${length} x ${llType(elem)}], align 16, addrspace(${this.spaces.private})`,
    );
    // Private arrays start as zero (IR semantics).
    this.emit(
      `store [${length} x ${llType(elem)}] zeroinitializer, ptr addrspace(${this.spaces.private}) %arr.${name}, align 16`,
    );
  }

  ifElse(cond: string, then: () => void, otherwise: (() => void) | undefined): void {
    const thenL = this.label("then");
    const elseL = otherwise ? this.label("else") : undefined;
    const end = this.label("endif");
    this.terminate(`br i1 ${cond}, label %${thenL}, label %${elseL ?? end}`);
    this.startBlock(thenL);
    then();
    if (this.open) this.terminate(`br label %${end}`);
    if (otherwise && elseL) {
      this.startBlock(elseL);
      otherwise();
      if (this.open) this.terminate(`br label %${end}`);
    }
    this.startBlock(end);
  }
  loop(cond: () => string, body: () => void, step: () => void): void {
    const head = this.label("loop");
    const bodyL = this.label("body");
    const cont = this.label("cont");
    const exit = this.label("exit");
    this.startBlock(head);
    const c = cond();
    this.terminate(`br i1 ${c}, label %${bodyL}, label %${exit}`);
    this.startBlock(bodyL);
    this.loops.push({ cont, exit });
    body();
    this.loops.pop();
    this.startBlock(cont);
    step();
    this.terminate(`br label %${head}`);
    this.startBlock(exit);
  }
  breakLoop(): void {
    this.terminate(`br label %${this.loops[this.loops.length - 1]!.exit}`);
  }
  continueLoop(): void {
    this.terminate(`br label %${this.loops[this.loops.length - 1]!.cont}`);
  }
  ret(): void {
    this.terminate("ret void");
  }
  /** Closes the function body. */
  finish(): void {
    if (this.open) this.terminate("ret void");
  }
}

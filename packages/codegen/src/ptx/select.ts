// PTX instruction selection: a RegTarget whose operands are virtual registers (%r, %f, %p, %rd, %h).
// Vectors are brace lists of scalar registers (`{%f1, %f2}`), the form PTX's vector loads and stores take.

import { elemOf, type MmaShape, type ValueType } from "@poot/kernel-dsl";
import type { RegTarget } from "../common/regs.js";
import { PtxMemory } from "./memory.js";
import { join, split } from "./regs.js";

/** PTX spelling of an f32 immediate (exact bit pattern). */
export function f32Imm(v: number): string {
  const b = new Uint32Array(new Float32Array([v]).buffer)[0]!;
  return `0f${b.toString(16).toUpperCase().padStart(8, "0")}`;
}

/** PTX instruction selection for the shared register-machine driver. */
export class PtxEmitter extends PtxMemory implements RegTarget<string> {
  constant(type: ValueType, value: number | boolean): string {
    if (type === "bool") {
      const p = this.reg("p");
      this.emit(`setp.ne.u32 ${p}, ${value ? 1 : 0}, 0;`);
      return p;
    }
    const d = this.fresh(type);
    this.emit(type === "f32" ? `mov.f32 ${d}, ${f32Imm(Number(value))};` : `mov.b32 ${d}, ${Number(value) | 0};`);
    return d;
  }

  builtin(name: string, axis: 0 | 1 | 2 | undefined): string {
    const ax = ["x", "y", "z"][axis ?? 0]!;
    const d = this.reg("r");
    switch (name) {
      case "local_id":
        this.emit(`mov.u32 ${d}, %tid.${ax};`);
        break;
      case "workgroup_id":
        this.emit(`mov.u32 ${d}, %ctaid.${ax};`);
        break;
      case "num_workgroups":
        this.emit(`mov.u32 ${d}, %nctaid.${ax};`);
        break;
      case "global_id": {
        const c = this.builtin("workgroup_id", axis);
        const t = this.builtin("local_id", axis);
        this.emit(`mad.lo.u32 ${d}, ${c}, ${this.wg[axis ?? 0]}, ${t};`);
        break;
      }
      case "local_index": {
        const [x, y, z] = [this.builtin("local_id", 0), this.builtin("local_id", 1), this.builtin("local_id", 2)];
        const yz = this.reg("r");
        this.emit(`mad.lo.u32 ${yz}, ${z}, ${this.wg[1]}, ${y};`);
        this.emit(`mad.lo.u32 ${d}, ${yz}, ${this.wg[0]}, ${x};`);
        break;
      }
      case "subgroup_lane":
        this.emit(`mov.u32 ${d}, %laneid;`);
        break;
      case "subgroup_id":
        this.emit(`div.u32 ${d}, ${this.builtin("local_index", undefined)}, ${this.subgroupSize};`);
        break;
      default:
        this.unsupported(`builtin ${name}`);
    }
    return d;
  }

  param(name: string): string {
    return this.paramReg.get(name)!;
  }

  unary(op: string, type: ValueType, a: string): string {
    if (op === "neg") return this.lanes(type, [a], (d, x) => `neg.${this.sfx(type)} ${d}, ${x};`);
    return this.lanes(type, [a], (d, x) => `not.${type === "bool" ? "pred" : "b32"} ${d}, ${x};`);
  }

  binary(op: string, type: ValueType, a: string, b: string): string {
    const e = elemOf(type);
    const s = this.sfx(type);
    const bits = e === "bool" ? "pred" : "b32";
    return this.lanes(type, [a, b], (d, x, y) => {
      switch (op) {
        case "add":
          return `add.${s} ${d}, ${x}, ${y};`;
        case "sub":
          return `sub.${s} ${d}, ${x}, ${y};`;
        case "mul":
          return e === "f32" ? `mul.rn.f32 ${d}, ${x}, ${y};` : `mul.lo.${s} ${d}, ${x}, ${y};`;
        case "div":
          return e === "f32" ? `div.rn.f32 ${d}, ${x}, ${y};` : `div.${s} ${d}, ${x}, ${y};`;
        case "rem": {
          if (e !== "f32") return `rem.${s} ${d}, ${x}, ${y};`;
          // fmod: x - trunc(x / y) * y.
          const q = this.reg("f");
          this.emit(`div.rn.f32 ${q}, ${x}, ${y};`);
          this.emit(`cvt.rzi.f32.f32 ${q}, ${q};`);
          this.emit(`neg.f32 ${q}, ${q};`);
          return `fma.rn.f32 ${d}, ${q}, ${y}, ${x};`;
        }
        case "and":
          return `and.${bits} ${d}, ${x}, ${y};`;
        case "or":
          return `or.${bits} ${d}, ${x}, ${y};`;
        case "xor":
          return `xor.${bits} ${d}, ${x}, ${y};`;
        case "shl":
        case "shr": {
          // PTX clamps shift counts; the IR takes them mod 32.
          const c = this.reg("r");
          this.emit(`and.b32 ${c}, ${y}, 31;`);
          return op === "shl" ? `shl.b32 ${d}, ${x}, ${c};` : `shr.${e === "i32" ? "s32" : "u32"} ${d}, ${x}, ${c};`;
        }
        default:
          return this.unsupported(`binary ${op}`);
      }
    });
  }

  cmp(op: string, operand: ValueType, a: string, b: string): string {
    const p = this.reg("p");
    if (operand === "bool") {
      this.emit(`xor.pred ${p}, ${a}, ${b};`);
      if (op === "eq") this.emit(`not.pred ${p}, ${p};`);
      else if (op !== "ne") this.unsupported(`ordering comparison ${op} on bool`);
      return p;
    }
    // Ordered comparisons for f32 (false on NaN) except ne, which is true on NaN (IEEE).
    const o = elemOf(operand) === "f32" && op === "ne" ? "neu" : op;
    this.emit(`setp.${o}.${this.sfx(operand)} ${p}, ${a}, ${b};`);
    return p;
  }

  select(type: ValueType, cond: string, a: string, b: string): string {
    if (type === "bool") {
      const t1 = this.reg("p");
      const t2 = this.reg("p");
      const nc = this.reg("p");
      const d = this.reg("p");
      this.emit(`and.pred ${t1}, ${cond}, ${a};`);
      this.emit(`not.pred ${nc}, ${cond};`);
      this.emit(`and.pred ${t2}, ${nc}, ${b};`);
      this.emit(`or.pred ${d}, ${t1}, ${t2};`);
      return d;
    }
    return this.lanes(
      type,
      [a, b],
      (d, x, y) => `selp.${elemOf(type) === "f32" ? "f32" : "b32"} ${d}, ${x}, ${y}, ${cond};`,
    );
  }

  call(fn: string, type: ValueType, args: readonly string[]): string {
    const e = elemOf(type);
    return this.lanes(type, args, (d, x, y, z) => {
      switch (fn) {
        case "exp": {
          const t = this.reg("f");
          this.emit(`mul.f32 ${t}, ${x}, ${f32Imm(Math.LOG2E)};`);
          return `ex2.approx.f32 ${d}, ${t};`;
        }
        case "log": {
          const t = this.reg("f");
          this.emit(`lg2.approx.f32 ${t}, ${x};`);
          return `mul.f32 ${d}, ${t}, ${f32Imm(Math.LN2)};`;
        }
        case "sqrt":
          return `sqrt.rn.f32 ${d}, ${x};`;
        case "rsqrt":
          return `rsqrt.approx.f32 ${d}, ${x};`;
        case "tanh":
          return `tanh.approx.f32 ${d}, ${x};`;
        case "sin":
          return `sin.approx.f32 ${d}, ${x};`;
        case "cos":
          return `cos.approx.f32 ${d}, ${x};`;
        case "floor":
          return `cvt.rmi.f32.f32 ${d}, ${x};`;
        case "fma":
          return `fma.rn.f32 ${d}, ${x}, ${y}, ${z};`;
        case "abs":
          return e === "u32" ? `mov.b32 ${d}, ${x};` : `abs.${this.sfx(type)} ${d}, ${x};`;
        case "min":
          return `min.${this.sfx(type)} ${d}, ${x}, ${y};`;
        case "max":
          return `max.${this.sfx(type)} ${d}, ${x}, ${y};`;
        case "erf":
          return this.erf(d, x!);
        default:
          return this.unsupported(`math ${fn}`);
      }
    });
  }

  /** erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7); returns the final instruction. */
  private erf(d: string, x: string): string {
    const ax = this.reg("f");
    const t = this.reg("f");
    const p = this.reg("f");
    const e = this.reg("f");
    this.emit(`abs.f32 ${ax}, ${x};`);
    this.emit(`fma.rn.f32 ${t}, ${ax}, ${f32Imm(0.3275911)}, ${f32Imm(1)};`);
    this.emit(`rcp.rn.f32 ${t}, ${t};`);
    this.emit(`mov.f32 ${p}, ${f32Imm(1.061405429)};`);
    for (const c of [-1.453152027, 1.421413741, -0.284496736, 0.254829592])
      this.emit(`fma.rn.f32 ${p}, ${p}, ${t}, ${f32Imm(c)};`);
    this.emit(`mul.f32 ${p}, ${p}, ${t};`);
    this.emit(`mul.f32 ${e}, ${ax}, ${ax};`);
    this.emit(`mul.f32 ${e}, ${e}, ${f32Imm(-Math.LOG2E)};`);
    this.emit(`ex2.approx.f32 ${e}, ${e};`);
    this.emit(`neg.f32 ${p}, ${p};`);
    this.emit(`fma.rn.f32 ${e}, ${p}, ${e}, ${f32Imm(1)};`);
    // copysign(result, x): erf is odd.
    return `copysign.f32 ${d}, ${x}, ${e};`;
  }

  cast(from: ValueType, to: ValueType, a: string): string {
    const fe = elemOf(from);
    const te = elemOf(to);
    if (te === "bool")
      return this.lanes(to, [a], (d, x) => `setp.ne.${this.sfx(from)} ${d}, ${x}, ${fe === "f32" ? f32Imm(0) : 0};`);
    if (fe === "bool")
      return this.lanes(to, [a], (d, x) =>
        te === "f32" ? `selp.f32 ${d}, ${f32Imm(1)}, ${f32Imm(0)}, ${x};` : `selp.b32 ${d}, 1, 0, ${x};`,
      );
    return this.lanes(to, [a], (d, x) => {
      if (fe === te || (fe !== "f32" && te !== "f32")) return `mov.b32 ${d}, ${x};`;
      // cvt.rzi saturates and maps NaN to 0, matching the IR's f32 -> int rule.
      if (fe === "f32") return `cvt.rzi.${this.sfx(to)}.f32 ${d}, ${x};`;
      return `cvt.rn.f32.${this.sfx(from)} ${d}, ${x};`;
    });
  }

  bitcast(_from: ValueType, to: ValueType, a: string): string {
    return this.lanes(to, [a], (d, x) => `mov.b32 ${d}, ${x};`);
  }

  pack(fmt: string, a: string): string {
    const d = this.reg("r");
    const [lo, hi] = split(a);
    if (fmt.startsWith("bf16") && !this.nativeBf16) {
      const l = this.bf16Bits(lo!);
      if (fmt === "bf16") return l;
      const u = this.bf16Bits(hi!);
      this.emit(`shl.b32 ${d}, ${u}, 16;`);
      this.emit(`or.b32 ${d}, ${d}, ${l};`);
      return d;
    }
    if (fmt === "bf16x2" || fmt === "f16x2") {
      // The first source goes to the upper half.
      this.emit(`cvt.rn.${fmt}.f32 ${d}, ${hi}, ${lo};`);
      return d;
    }
    const h = this.reg("h");
    this.emit(`cvt.rn.${fmt}.f32 ${h}, ${lo};`);
    this.emit(`cvt.u32.u16 ${d}, ${h};`);
    return d;
  }

  unpack(fmt: string, type: ValueType, a: string): string {
    const d = this.fresh(type);
    const ds = split(d);
    if (fmt.startsWith("bf16")) {
      this.emit(`shl.b32 ${ds[0]}, ${a}, 16;`);
      if (ds[1]) this.emit(`and.b32 ${ds[1]}, ${a}, -65536;`);
      return d;
    }
    const h0 = this.reg("h");
    const h1 = this.reg("h");
    this.emit(`mov.b32 {${h0}, ${h1}}, ${a};`);
    this.emit(`cvt.f32.f16 ${ds[0]}, ${h0};`);
    if (ds[1]) this.emit(`cvt.f32.f16 ${ds[1]}, ${h1};`);
    return d;
  }

  vec(_type: ValueType, elems: readonly string[]): string {
    return join(elems);
  }

  extract(_vecType: ValueType, lane: number, a: string): string {
    return split(a)[lane]!;
  }

  /**
   * `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32`: the IR's fragments are already the
   * instruction's register fragments (A: four .b32 of packed pairs, B: two, C/D: four .f32), so no data moves.
   */
  mma(_shape: MmaShape, input: "bf16" | "f16", a: string, b: string, c: string): string {
    const d = this.fresh("vec4<f32>");
    this.emit(`mma.sync.aligned.m16n8k16.row.col.f32.${input}.${input}.f32 ${d}, ${a}, ${b}, ${c};`);
    return d;
  }

  subgroup(op: string, type: ValueType, value: string, lane: string | undefined): string {
    const d = this.fresh(type);
    const full = "0xffffffff";
    if (op === "broadcast" || op === "shuffle_idx") {
      this.emit(`shfl.sync.idx.b32 ${d}, ${value}, ${lane}, 0x1f, ${full};`);
      return d;
    }
    if (op === "shuffle_xor") {
      this.emit(`shfl.sync.bfly.b32 ${d}, ${value}, ${lane}, 0x1f, ${full};`);
      return d;
    }
    // Butterfly reduction: after log2(size) xor-shuffles every lane holds the result.
    this.emit(`mov.b32 ${d}, ${value};`);
    const f = op === "reduce_add" ? "add" : op === "reduce_max" ? "max" : "min";
    for (let off = this.subgroupSize >> 1; off > 0; off >>= 1) {
      const o = this.fresh(type);
      this.emit(`shfl.sync.bfly.b32 ${o}, ${d}, ${off}, 0x1f, ${full};`);
      this.emit(`${f}.${this.sfx(type)} ${d}, ${d}, ${o};`);
    }
    return d;
  }
}

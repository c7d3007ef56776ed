// PTX memory access for instruction selection: byte addresses in the global, shared and local state spaces, typed
// loads and stores (bf16 and f16 through 16-bit moves, vectors as ld.v2/v4), atomics and the workgroup barrier.

import { elemOf, lanesOf, type ElemType, type ValueType } from "@poot/kernel-dsl";
import { PtxBase } from "./regs.js";

/** The memory half of PTX instruction selection (PtxEmitter adds arithmetic, conversions and subgroups). */
export abstract class PtxMemory extends PtxBase {
  /** Byte address of element `index` of an array; returns [address operand, state space]. */
  protected address(space: string, array: string, elem: ElemType, index: string): [string, string] {
    const size = elem === "bf16" || elem === "f16" ? 2 : elem === "u8" || elem === "i8" ? 1 : 4 * lanesOf(elem);
    if (space === "global") {
      const off = this.reg("rd");
      const a = this.reg("rd");
      this.emit(`mul.wide.u32 ${off}, ${index}, ${size};`);
      this.emit(`add.s64 ${a}, ${this.bufferBase.get(array)!}, ${off};`);
      return [`[${a}]`, "global"];
    }
    if (space === "workgroup") {
      const base = this.reg("r");
      const a = this.reg("r");
      this.emit(`mov.u32 ${base}, ${array};`);
      this.emit(`mad.lo.u32 ${a}, ${index}, ${size}, ${base};`);
      return [`[${a}]`, "shared"];
    }
    const base = this.reg("rd");
    const off = this.reg("rd");
    const a = this.reg("rd");
    this.emit(`mov.u64 ${base}, ${array};`);
    this.emit(`mul.wide.u32 ${off}, ${index}, ${size};`);
    this.emit(`add.s64 ${a}, ${base}, ${off};`);
    return [`[${a}]`, "local"];
  }

  load(space: string, array: string, elem: ElemType, index: string, type: ValueType): string {
    const [addr, ss] = this.address(space, array, elem, index);
    const d = this.fresh(type);
    switch (elem) {
      case "bf16": {
        const r = this.reg("r");
        this.emit(`ld.${ss}.u16 ${r}, ${addr};`);
        this.emit(`shl.b32 ${d}, ${r}, 16;`);
        return d;
      }
      case "f16": {
        const h = this.reg("h");
        this.emit(`ld.${ss}.b16 ${h}, ${addr};`);
        this.emit(`cvt.f32.f16 ${d}, ${h};`);
        return d;
      }
      case "u8":
        this.emit(`ld.${ss}.u8 ${d}, ${addr};`);
        return d;
      case "i8":
        this.emit(`ld.${ss}.s8 ${d}, ${addr};`);
        return d;
      default: {
        const n = lanesOf(elem);
        // Vector elements become one vector load (ld.v2 / ld.v4), naturally aligned by the buffer layout.
        this.emit(
          `ld.${ss}${n > 1 ? `.v${n}` : ""}.${elemOf(elem as ValueType) === "f32" ? "f32" : "b32"} ${d}, ${addr};`,
        );
        return d;
      }
    }
  }

  store(space: string, array: string, elem: ElemType, index: string, value: string): void {
    const [addr, ss] = this.address(space, array, elem, index);
    switch (elem) {
      case "bf16":
        if (!this.nativeBf16) {
          this.emit(`st.${ss}.u16 ${addr}, ${this.bf16Bits(value)};`);
          return;
        }
      // falls through: native bf16 conversion
      case "f16": {
        const h = this.reg("h");
        this.emit(`cvt.rn.${elem}.f32 ${h}, ${value};`);
        this.emit(`st.${ss}.b16 ${addr}, ${h};`);
        return;
      }
      case "u8":
      case "i8":
        this.emit(`st.${ss}.u8 ${addr}, ${value};`);
        return;
      default: {
        const n = lanesOf(elem);
        this.emit(
          `st.${ss}${n > 1 ? `.v${n}` : ""}.${elemOf(elem as ValueType) === "f32" ? "f32" : "b32"} ${addr}, ${value};`,
        );
      }
    }
  }

  /** f32 -> bf16 bits in a b32 register with integer ops (round to nearest even, NaN kept quiet), for caps without bf16. */
  protected bf16Bits(f: string): string {
    const [b, h, t, q, r] = [this.reg("r"), this.reg("r"), this.reg("r"), this.reg("r"), this.reg("r")];
    const nan = this.reg("p");
    this.emit(`mov.b32 ${b}, ${f};`);
    this.emit(`shr.u32 ${h}, ${b}, 16;`);
    this.emit(`and.b32 ${t}, ${h}, 1;`);
    this.emit(`add.u32 ${t}, ${t}, ${b};`);
    this.emit(`add.u32 ${t}, ${t}, 32767;`);
    this.emit(`shr.u32 ${t}, ${t}, 16;`);
    this.emit(`or.b32 ${q}, ${h}, 64;`);
    this.emit(`setp.nan.f32 ${nan}, ${f}, ${f};`);
    this.emit(`selp.b32 ${r}, ${q}, ${t}, ${nan};`);
    return r;
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
    const [addr, ss] = this.address(space, array, type, index);
    const t = type === "f32" ? "f32" : type === "i32" ? "s32" : "u32";
    const d = this.fresh(type);
    switch (op) {
      case "add":
        this.emit(`atom.${ss}.add.${t} ${d}, ${addr}, ${value};`);
        return d;
      case "max":
      case "min":
        this.emit(`atom.${ss}.${op}.${t} ${d}, ${addr}, ${value};`);
        return d;
      case "exchange":
        this.emit(`atom.${ss}.exch.b32 ${d}, ${addr}, ${value};`);
        return d;
      case "cmpxchg":
        this.emit(`atom.${ss}.cas.b32 ${d}, ${addr}, ${compare}, ${value};`);
        return d;
      case "load":
        this.emit(`ld.relaxed.gpu.${ss}.b32 ${d}, ${addr};`);
        return d;
      case "store":
        this.emit(`st.relaxed.gpu.${ss}.b32 ${addr}, ${value};`);
        return undefined;
      default:
        return this.unsupported(`atomic ${op}`);
    }
  }

  barrier(): void {
    this.emit("bar.sync 0;");
  }
}

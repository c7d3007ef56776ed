// LLVM IR instruction selection for x86-64: one address space, the workgroup's invocations run one after another in a
// loop on the calling thread (so no barriers and subgroups of one lane), and `load4` as one unaligned vector load.

import { elemOf, lanesOf, type ElemType, type SubgroupOp, type ValueType } from "@poot/kernel-dsl";
import { LlvmEmitter, llType } from "../common/llvm.js";

/** Emission state of one x86-64 kernel; `%lane` is the invocation's local index, `%wg.{x,y,z}` the workgroup's id. */
export class X86Emitter extends LlvmEmitter {
  constructor(
    kernel: string,
    private readonly wg: readonly [number, number, number],
    /** Where a returning invocation goes: the next invocation of the lane loop, or out of the function. */
    private readonly exit: string,
  ) {
    super(kernel, "x86", { global: 0, workgroup: 0, private: 0 }, { global: "", workgroup: "" });
  }

  builtin(name: string, axis: 0 | 1 | 2 | undefined): string {
    const a = axis ?? 0;
    const [x, y] = this.wg;
    const lane = (): string => (x * y * this.wg[2] === 1 ? "0" : this.def("load i32, ptr %lane.addr, align 4"));
    switch (name) {
      case "workgroup_id":
        // The pool runs 1-D grids of native kernels: y and z ids are 0.
        return a === 0 ? "%group" : "0";
      case "local_index":
        return lane();
      case "local_id": {
        const l = lane();
        if (a === 0) return x === 1 ? "0" : this.def(`urem i32 ${l}, ${x}`);
        if (a === 1) return y === 1 ? "0" : this.def(`urem i32 ${this.def(`udiv i32 ${l}, ${x}`)}, ${y}`);
        return this.def(`udiv i32 ${l}, ${x * y}`);
      }
      case "global_id":
        return this.def(
          `add i32 ${this.def(`mul i32 ${this.builtin("workgroup_id", axis)}, ${this.wg[a]}`)}, ${this.builtin("local_id", axis)}`,
        );
      case "subgroup_lane":
        return "0";
      case "subgroup_id":
        return lane();
      default:
        return this.unsupported(`builtin ${name}`);
    }
  }

  /** Subgroups have one lane: every reduction, broadcast and shuffle returns the value itself. */
  subgroup(_op: SubgroupOp, _type: ValueType, value: string): string {
    return value;
  }

  barrier(): void {
    this.unsupported("barrier (the invocations of a workgroup run one after another)");
  }

  /**
   * `dot4U8I8` as AVX-512 VNNI's `vpdpbusd` (decision 2320; the library compiles such a kernel for AVX-512 VNNI): one
   * instruction per vec4, vec8 or vec16 (128, 256 or 512 bits: 16, 32 or 64 multiply-adds; decision 2330), a scalar
   * through lane 0 of a vec4.
   */
  override call(fn: string, type: ValueType, args: readonly string[]): string {
    if (fn !== "dot4U8I8") return super.call(fn, type, args);
    const vector = type !== "i32";
    const n = vector ? lanesOf(type) : 4;
    const name = `llvm.x86.avx512.vpdpbusd.${32 * n}`;
    const vt = `<${n} x i32>`;
    this.declares.add(`declare ${vt} @${name}(${vt}, ${vt}, ${vt})`);
    const v = (x: string): string => (vector ? x : this.def(`insertelement ${vt} zeroinitializer, i32 ${x}, i64 0`));
    const r = this.def(`call ${vt} @${name}(${args.map((x) => `${vt} ${v(x)}`).join(", ")})`);
    return vector ? r : this.def(`extractelement ${vt} ${r}, i64 0`);
  }

  /**
   * Four (or, for a vec8/vec16 type, 8 or 16) consecutive elements as one unaligned vector load, widened in-register
   * (f16/bf16 to f32, bytes to i32);
   * `packed`: 16, 32 or 64 bytes as one unaligned `<4 x i32>`, `<8 x i32>` or `<16 x i32>` load (decisions 2320, 2330).
   */
  load4(array: string, elem: ElemType, index: string, type: ValueType, packed = false): string {
    const p = this.pointer("global", array, elem, index);
    if (packed) return this.def(`load <${lanesOf(type)} x i32>, ptr ${p}, align 1`);
    const et = llType(elem);
    const n = lanesOf(type);
    const raw = this.def(
      `load <${n} x ${et}>, ptr ${p}, align ${elem === "f16" || elem === "bf16" ? 2 : elem === "u8" || elem === "i8" ? 1 : 4}`,
    );
    switch (elem) {
      case "f16":
        return this.def(`fpext <${n} x half> ${raw} to <${n} x float>`);
      case "bf16": {
        const w = this.def(`shl <${n} x i32> ${this.def(`zext <${n} x i16> ${raw} to <${n} x i32>`)}, splat (i32 16)`);
        return this.def(`bitcast <${n} x i32> ${w} to <${n} x float>`);
      }
      case "u8":
      case "i8":
        // vecN<i32> sign-extends, vecN<u32> zero-extends (whatever the storage's own signedness).
        return this.def(`${elemOf(type) === "i32" ? "sext" : "zext"} <${n} x i8> ${raw} to <${n} x i32>`);
      default:
        return raw;
    }
  }

  override ret(): void {
    this.terminate(this.exit);
  }
  override finish(): void {
    if (this.open) this.terminate(this.exit);
  }
}

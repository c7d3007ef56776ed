// LLVM IR instruction selection for x86-64: one address space, the workgroup's invocations run one after another in a
// loop on the calling thread (so no barriers and subgroups of one lane), and `load4` as one unaligned vector load.

import { elemOf, lanesOf, type ElemType, type SubgroupOp, type ValueType } from "@poot/kernel-dsl";
import { LlvmEmitter } from "../common/llvm.js";
import { llType } from "../common/llvm-types.js";

/**
 * How the x86 target lowers `dot4U8I8`: `"vnni"`, AVX-512 VNNI's `vpdpbusd` (decision 2320); `"widen"`, widening
 * multiplies and adds any x86-64-v3 (AVX2) CPU runs, the same exact integer sums (decision 2335).
 */
export type X86Dot4 = "vnni" | "widen";

/** Emission state of one x86-64 kernel; `%lane` is the invocation's local index, `%wg.{x,y,z}` the workgroup's id. */
export class X86Emitter extends LlvmEmitter {
  constructor(
    kernel: string,
    private readonly wg: readonly [number, number, number],
    /** Where a returning invocation goes: the next invocation of the lane loop, or out of the function. */
    private readonly exit: string,
    /** How `dot4U8I8` lowers: AVX-512 VNNI's `vpdpbusd`, or widening multiplies any x86-64-v3 CPU runs. */
    private readonly dot4: X86Dot4 = "vnni",
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
   * through lane 0 of a vec4; with `dot4` "widen" (decision 2335), the same sums from target-independent IR.
   */
  override call(fn: string, type: ValueType, args: readonly string[]): string {
    if (fn !== "dot4U8I8") return super.call(fn, type, args);
    const vector = type !== "i32";
    const n = vector ? lanesOf(type) : 4;
    const vt = `<${n} x i32>`;
    const v = (x: string): string => (vector ? x : this.def(`insertelement ${vt} zeroinitializer, i32 ${x}, i64 0`));
    const [acc, a, b] = args.map(v) as [string, string, string];
    let r: string;
    if (this.dot4 === "widen") r = this.def(`add ${vt} ${acc}, ${this.widenedDot4(n, a, b)}`);
    else {
      const name = `llvm.x86.avx512.vpdpbusd.${32 * n}`;
      this.declares.add(`declare ${vt} @${name}(${vt}, ${vt}, ${vt})`);
      r = this.def(`call ${vt} @${name}(${vt} ${acc}, ${vt} ${a}, ${vt} ${b})`);
    }
    return vector ? r : this.def(`extractelement ${vt} ${r}, i64 0`);
  }

  /**
   * Per lane of `<n x i32>` a, b: Σₖ u8(a, k) · i8(b, k), exactly, without VNNI (decision 2335): the bytes widened to
   * i16 (each product fits: |u8 · i8| ≤ 32640), the even and odd products of each pair summed in i32 (`vpmaddwd`'s
   * pattern), then the two pairs of each lane. No saturation (unlike `vpmaddubsw`, whose i16 pair sums overflow).
   */
  private widenedDot4(n: number, a: string, b: string): string {
    const bytes = 4 * n;
    const half = bytes / 2;
    const pick = (v: string, len: number, t: string, odd: number): string => {
      const idx = Array.from({ length: len / 2 }, (_, i) => `i32 ${2 * i + odd}`).join(", ");
      return this.def(`shufflevector <${len} x ${t}> ${v}, <${len} x ${t}> poison, <${len / 2} x i32> <${idx}>`);
    };
    const wide = (x: string, ext: "zext" | "sext"): string =>
      this.def(
        `${ext} <${bytes} x i8> ${this.def(`bitcast <${n} x i32> ${x} to <${bytes} x i8>`)} to <${bytes} x i16>`,
      );
    const a16 = wide(a, "zext");
    const b16 = wide(b, "sext");
    const prod = (odd: number): string => {
      const x = this.def(`sext <${half} x i16> ${pick(a16, bytes, "i16", odd)} to <${half} x i32>`);
      const y = this.def(`sext <${half} x i16> ${pick(b16, bytes, "i16", odd)} to <${half} x i32>`);
      return this.def(`mul <${half} x i32> ${x}, ${y}`);
    };
    const pairs = this.def(`add <${half} x i32> ${prod(0)}, ${prod(1)}`);
    return this.def(`add <${n} x i32> ${pick(pairs, half, "i32", 0)}, ${pick(pairs, half, "i32", 1)}`);
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

// LLVM IR instruction selection for AMDGPU: address spaces 1 (global), 3 (LDS), 5 (private), workitem
// intrinsics, DPP-free subgroup ops through ds.bpermute, and atomics with agent/workgroup scope.

import { lanesOf, type MmaInput, type MmaShape, type ValueType } from "@poot/kernel-dsl";
import { LlvmEmitter } from "../common/llvm.js";
import { amdMatrixIntrinsic, WMMA_A, WMMA_B, WMMA_KEEP_BIT, type WmmaGather } from "./mma.js";

export { llFloat, llType } from "../common/llvm-types.js";

/** Emission state of one AMDGPU kernel. */
export class AmdgpuEmitter extends LlvmEmitter {
  constructor(
    kernel: string,
    private readonly subgroupSize: number,
    private readonly wg: readonly [number, number, number],
  ) {
    super(kernel, "amdgpu", { global: 1, workgroup: 3, private: 5 }, { global: "agent", workgroup: "workgroup" });
  }

  builtin(name: string, axis: 0 | 1 | 2 | undefined): string {
    const ax = ["x", "y", "z"][axis ?? 0]!;
    switch (name) {
      case "local_id":
        return this.intrinsic(
          `declare i32 @llvm.amdgcn.workitem.id.${ax}()`,
          `call i32 @llvm.amdgcn.workitem.id.${ax}()`,
        );
      case "workgroup_id":
        return this.intrinsic(
          `declare i32 @llvm.amdgcn.workgroup.id.${ax}()`,
          `call i32 @llvm.amdgcn.workgroup.id.${ax}()`,
        );
      case "global_id": {
        const w = this.builtin("workgroup_id", axis);
        const l = this.builtin("local_id", axis);
        return this.def(`add i32 ${this.def(`mul i32 ${w}, ${this.wg[axis ?? 0]}`)}, ${l}`);
      }
      case "num_workgroups": {
        // grid_size_{x,y,z} of the HSA dispatch packet (bytes 12, 16, 20), in work-items.
        const dp = this.intrinsic(
          "declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()",
          "call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()",
        );
        const gp = this.def(`getelementptr inbounds i8, ptr addrspace(4) ${dp}, i64 ${12 + 4 * (axis ?? 0)}`);
        const grid = this.def(`load i32, ptr addrspace(4) ${gp}, align 4`);
        return this.def(`udiv i32 ${grid}, ${this.wg[axis ?? 0]}`);
      }
      case "local_index": {
        const [x, y, z] = [this.builtin("local_id", 0), this.builtin("local_id", 1), this.builtin("local_id", 2)];
        const zy = this.def(`add i32 ${this.def(`mul i32 ${z}, ${this.wg[1]}`)}, ${y}`);
        return this.def(`add i32 ${this.def(`mul i32 ${zy}, ${this.wg[0]}`)}, ${x}`);
      }
      case "subgroup_lane": {
        const lo = this.intrinsic(
          "declare i32 @llvm.amdgcn.mbcnt.lo(i32, i32)",
          "call i32 @llvm.amdgcn.mbcnt.lo(i32 -1, i32 0)",
        );
        if (this.subgroupSize === 32) return lo;
        return this.intrinsic(
          "declare i32 @llvm.amdgcn.mbcnt.hi(i32, i32)",
          `call i32 @llvm.amdgcn.mbcnt.hi(i32 -1, i32 ${lo})`,
        );
      }
      case "subgroup_id":
        return this.def(`udiv i32 ${this.builtin("local_index", undefined)}, ${this.subgroupSize}`);
      default:
        return this.unsupported(`builtin ${name}`);
    }
  }

  /** Reads `value` from lane `src` with ds.bpermute (byte address = lane * 4). */
  private permute(type: ValueType, src: string, value: string): string {
    this.declares.add("declare i32 @llvm.amdgcn.ds.bpermute(i32, i32)");
    const addr = this.def(`shl i32 ${src}, 2`);
    const bits = type === "f32" ? this.def(`bitcast float ${value} to i32`) : value;
    const r = this.def(`call i32 @llvm.amdgcn.ds.bpermute(i32 ${addr}, i32 ${bits})`);
    return type === "f32" ? this.def(`bitcast i32 ${r} to float`) : r;
  }

  subgroup(op: string, type: ValueType, value: string, lane: string | undefined): string {
    if (lanesOf(type) > 1 || type === "bool") return this.unsupported(`subgroup ${op} on ${type}`);
    if (op === "broadcast" || op === "shuffle_idx") return this.permute(type, lane!, value);
    const me = this.builtin("subgroup_lane", undefined);
    if (op === "shuffle_xor") return this.permute(type, this.def(`xor i32 ${me}, ${lane}`), value);
    let acc = value;
    const fn = op === "reduce_add" ? "add" : op === "reduce_max" ? "max" : "min";
    for (let off = this.subgroupSize >> 1; off > 0; off >>= 1) {
      const other = this.permute(type, this.def(`xor i32 ${me}, ${off}`), acc);
      acc = fn === "add" ? this.binary("add", type, acc, other) : this.call(fn, type, [acc, other]);
    }
    return acc;
  }

  /**
   * The AMD `mma` shapes (decision 2401). `m16n16k16_mfma`: the fragments are the MFMA registers, bit-cast to the
   * intrinsic's 16-bit vectors. `m16n8k16_wmma`: A and B registers gathered from other lanes (WMMA_A, WMMA_B), C
   * placed in the four accumulators this lane keeps (zeros elsewhere), and D read back from them.
   */
  mma(shape: MmaShape, input: MmaInput, a: string, b: string, c: string): string {
    if (shape === "m16n16k16_mfma") {
      const f = amdMatrixIntrinsic("mfma", input);
      const av = this.def(`bitcast <2 x i32> ${a} to ${f.ab}`);
      const bv = this.def(`bitcast <2 x i32> ${b} to ${f.ab}`);
      this.declares.add(`declare ${f.c} @${f.name}(${f.ab}, ${f.ab}, ${f.c}, i32, i32, i32)`);
      return this.def(`call ${f.c} @${f.name}(${f.ab} ${av}, ${f.ab} ${bv}, ${f.c} ${c}${f.extra})`);
    }
    if (shape !== "m16n8k16_wmma") return this.unsupported(`mma ${shape}`);
    const f = amdMatrixIntrinsic("wmma", input);
    const lane = this.builtin("subgroup_lane", undefined);
    const gather = (g: WmmaGather, frag: string, fragType: ValueType): string => {
      const base = this.def(`and i32 ${lane}, ${g.mask}`);
      const words = g.words.map((w) => {
        const src = w.offset === 0 ? base : this.def(`add i32 ${base}, ${w.offset}`);
        return this.permute("u32", src, this.extract(fragType, w.word, frag));
      });
      return this.def(`bitcast <8 x i32> ${this.words8(words)} to ${f.ab}`);
    };
    const av = gather(WMMA_A, a, "vec4<u32>");
    const bv = gather(WMMA_B, b, "vec2<u32>");
    const hi = this.def(`icmp ne i32 ${this.def(`and i32 ${lane}, ${1 << WMMA_KEEP_BIT}`)}, 0`);
    let c8 = "poison";
    for (let v = 0; v < 8; v++) {
      const x = this.extract("vec4<f32>", v & 3, c);
      const item =
        v < 4 ? this.def(`select i1 ${hi}, float 0.0, float ${x}`) : this.def(`select i1 ${hi}, float ${x}, float 0.0`);
      c8 = this.def(`insertelement <8 x float> ${c8}, float ${item}, i32 ${v}`);
    }
    this.declares.add(`declare ${f.c} @${f.name}(${f.ab}, ${f.ab}, ${f.c})`);
    const d8 = this.def(`call ${f.c} @${f.name}(${f.ab} ${av}, ${f.ab} ${bv}, ${f.c} ${c8})`);
    const d = [0, 1, 2, 3].map((i) => {
      const lo = this.def(`extractelement <8 x float> ${d8}, i32 ${i}`);
      const up = this.def(`extractelement <8 x float> ${d8}, i32 ${i + 4}`);
      return this.def(`select i1 ${hi}, float ${up}, float ${lo}`);
    });
    return this.vec("vec4<f32>", d);
  }

  /** Eight i32 values as one `<8 x i32>`. */
  private words8(words: readonly string[]): string {
    let v = "poison";
    words.forEach((x, i) => {
      v = this.def(`insertelement <8 x i32> ${v}, i32 ${x}, i32 ${i}`);
    });
    return v;
  }

  barrier(): void {
    this.declares.add("declare void @llvm.amdgcn.s.barrier()");
    this.emit(`fence syncscope("workgroup") release`);
    this.emit("call void @llvm.amdgcn.s.barrier()");
    this.emit(`fence syncscope("workgroup") acquire`);
  }
}

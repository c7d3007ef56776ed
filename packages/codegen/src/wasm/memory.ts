// Wasm memory access for instruction selection: addresses in linear memory (buffers, the workgroup's shared area,
// the thread's frame), typed loads and stores (f16 and bf16 through integer moves, v128 vectors), atomics, barriers.

import { lanesOf, type ElemType, type ValueType } from "@poot/kernel-dsl";
import { invariant } from "../errors.js";
import { Atomic, Simd, W } from "./code.js";
import { ValType } from "./module.js";
import { MATH_IMPORTS, WasmBase } from "./frame.js";

/** The memory half of Wasm instruction selection (WasmEmitter adds arithmetic, conversions and calls). */
export abstract class WasmMemory extends WasmBase {
  /** Pushes the byte address of element `index` of an array. */
  protected address(space: string, array: string, elem: ElemType, index: number): void {
    const size = elem === "bf16" || elem === "f16" ? 2 : elem === "u8" || elem === "i8" ? 1 : 4 * lanesOf(elem);
    if (space === "global") this.get(this.bufferBase.get(array)!);
    else if (space === "workgroup") this.get(this.ctx.shared).c.i32(this.sharedOffset.get(array)!).op(W.i32_add);
    else this.get(this.ctx.frame).c.i32(this.slots.get(array)!.offset).op(W.i32_add);
    this.get(index).c.i32(size).op(W.i32_mul).op(W.i32_add);
  }

  load(space: string, array: string, elem: ElemType, index: number, type: ValueType): number {
    this.address(space, array, elem, index);
    switch (elem) {
      case "bf16":
        this.mem(W.i32_load16_u, 1).c.i32(16).op(W.i32_shl).op(W.f32_reinterpret_i32);
        break;
      case "f16":
        this.mem(W.i32_load16_u, 1);
        this.f16Widen();
        break;
      case "u8":
        this.mem(W.i32_load8_u, 0);
        break;
      case "i8":
        this.mem(W.i32_load8_s, 0);
        break;
      case "f32":
        this.mem(W.f32_load, 2);
        break;
      case "u32":
      case "i32":
        this.mem(W.i32_load, 2);
        break;
      default:
        if (lanesOf(elem) === 4) this.c.simdMem(Simd.v128_load, 4);
        else this.c.simdMem(0x5d /* v128.load64_zero */, 3);
    }
    return this.put(type);
  }

  /**
   * `load4`: one SIMD load of four elements, widened in-register. Bytes: `v128.load32_zero` then two extends
   * (signed for vec4<i32>); 16-bit floats: `v128.load64_zero`, zero-extend to i32x4, then the bf16 shift or the
   * exact f16 widening; 32-bit elements: `v128.load`.
   */
  load4(array: string, elem: ElemType, index: number, type: ValueType): number {
    this.address("global", array, elem, index);
    const signed = type === "vec4<i32>";
    switch (elem) {
      case "u8":
      case "i8":
        this.c.simdMem(Simd.v128_load32_zero, 0);
        this.c.simd(signed ? Simd.i16x8_extend_low_i8x16_s : Simd.i16x8_extend_low_i8x16_u);
        this.c.simd(signed ? Simd.i32x4_extend_low_i16x8_s : Simd.i32x4_extend_low_i16x8_u);
        break;
      case "bf16":
        this.c.simdMem(Simd.v128_load64_zero, 1).simd(Simd.i32x4_extend_low_i16x8_u).i32(16).simd(Simd.i32x4_shl);
        break;
      case "f16":
        this.c.simdMem(Simd.v128_load64_zero, 1).simd(Simd.i32x4_extend_low_i16x8_u);
        this.f16Widen4();
        break;
      default:
        this.c.simdMem(Simd.v128_load, 2);
    }
    return this.put(type);
  }

  /** {@link f16Widen} on the four i32 lanes on the stack (f16 bits, zero-extended), with a lane mask for inf/NaN. */
  protected f16Widen4(): void {
    const h = this.pool.temp(ValType.v128);
    const em = this.pool.temp(ValType.v128);
    const splat = (v: number): void => void this.c.i32(v).simd(Simd.i32x4_splat);
    this.c.opU(W.local_tee, h);
    splat(0x7fff);
    this.c.simd(Simd.v128_and).opU(W.local_set, em);
    this.get(em).c.i32(13).simd(Simd.i32x4_shl);
    splat(0x7f800000);
    this.c.simd(Simd.v128_or);
    this.get(em).c.i32(13).simd(Simd.i32x4_shl);
    this.c
      .f32(2 ** 112)
      .simd(Simd.f32x4_splat)
      .simd(Simd.f32x4_mul);
    this.get(em);
    splat(0x7c00);
    this.c.simd(Simd.i32x4_ge_s).simd(Simd.v128_bitselect);
    this.get(h);
    splat(0x8000);
    this.c.simd(Simd.v128_and).i32(16).simd(Simd.i32x4_shl).simd(Simd.v128_or);
  }

  store(space: string, array: string, elem: ElemType, index: number, value: number): void {
    this.address(space, array, elem, index);
    switch (elem) {
      case "bf16":
        this.bf16Bits(value);
        this.mem(W.i32_store16, 1);
        return;
      case "f16":
        this.get(value).c.opU(W.call, MATH_IMPORTS.indexOf("f32_to_f16"));
        this.mem(W.i32_store16, 1);
        return;
      case "u8":
      case "i8":
        this.get(value).mem(W.i32_store8, 0);
        return;
      case "f32":
        this.get(value).mem(W.f32_store, 2);
        return;
      case "u32":
      case "i32":
        this.get(value).mem(W.i32_store, 2);
        return;
      default:
        if (lanesOf(elem) === 4) this.get(value).c.simdMem(Simd.v128_store, 4);
        else this.get(value).c.simdMem(0x5b /* v128.store64_lane */, 3).raw(0);
    }
  }

  /**
   * Replaces the f16 bits on the stack by their f32 value, inline (exact): the magnitude bits shifted into f32
   * position and scaled by 2^112 cover normals and subnormals; exponent 31 maps to f32 inf/NaN; then the sign.
   */
  protected f16Widen(): void {
    const h = this.pool.temp(ValType.i32);
    const em = this.pool.temp(ValType.i32);
    this.c.opU(W.local_tee, h).i32(0x7fff).op(W.i32_and).opU(W.local_set, em);
    this.get(em).c.i32(13).op(W.i32_shl).i32(0x7f800000).op(W.i32_or);
    this.get(em)
      .c.i32(13)
      .op(W.i32_shl)
      .op(W.f32_reinterpret_i32)
      .f32(2 ** 112)
      .op(W.f32_mul)
      .op(W.i32_reinterpret_f32);
    this.get(em).c.i32(0x7c00).op(W.i32_ge_u).op(W.select);
    this.get(h).c.i32(0x8000).op(W.i32_and).i32(16).op(W.i32_shl).op(W.i32_or).op(W.f32_reinterpret_i32);
  }

  /** Pushes the bf16 bits (RNE, NaN kept quiet) of f32 local `f`. */
  protected bf16Bits(f: number): void {
    const b = this.pool.temp(ValType.i32);
    this.get(f).c.op(W.i32_reinterpret_f32).opU(W.local_set, b);
    this.get(b).c.i32(16).op(W.i32_shr_u).i32(0x40).op(W.i32_or); // NaN result
    this.get(b).c.i32(0x7fff).op(W.i32_add);
    this.get(b).c.i32(16).op(W.i32_shr_u).i32(1).op(W.i32_and).op(W.i32_add).i32(16).op(W.i32_shr_u); // rounded
    this.get(f).get(f).c.op(W.f32_ne); // isnan
    this.c.op(W.select);
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
    const addr = this.pool.temp(ValType.i32);
    this.address(space, array, type, index);
    this.c.opU(W.local_set, addr);
    const rmw: Record<string, number> = { add: Atomic.i32_rmw_add, exchange: Atomic.i32_rmw_xchg };
    if (type !== "f32" && rmw[op] !== undefined) {
      this.get(addr).get(value!).c.atomic(rmw[op]!, 2);
      return this.put(type);
    }
    switch (op) {
      case "load":
        this.get(addr).c.atomic(Atomic.i32_load, 2);
        return this.put(type);
      case "store":
        this.get(addr).get(value!).c.atomic(Atomic.i32_store, 2);
        return undefined;
      case "cmpxchg":
        this.get(addr).get(compare!).get(value!).c.atomic(Atomic.i32_rmw_cmpxchg, 2);
        return this.put(type);
      default:
        break;
    }
    // max / min / f32 add: compare-exchange loop on the 32-bit word.
    const old = this.pool.temp(ValType.i32);
    const next = this.pool.temp(ValType.i32);
    this.get(addr).c.atomic(Atomic.i32_load, 2).opU(W.local_set, old);
    this.c.open(W.loop);
    if (type === "f32")
      this.get(old).c.op(W.f32_reinterpret_i32), this.get(value!).c.op(W.f32_add).op(W.i32_reinterpret_f32);
    else
      this.get(value!)
        .get(old)
        .get(value!)
        .get(old)
        .c.op(type === "i32" ? (op === "max" ? W.i32_gt_s : W.i32_lt_s) : op === "max" ? W.i32_gt_u : W.i32_lt_u)
        .op(W.select);
    this.c.opU(W.local_set, next);
    this.get(addr).get(old).get(next).c.atomic(Atomic.i32_rmw_cmpxchg, 2);
    // Retry while another agent changed the word in between (the returned value differs from `old`).
    this.c.opU(W.local_tee, next).opU(W.local_get, old).op(W.i32_ne);
    this.get(next).c.opU(W.local_set, old).opU(W.br_if, 0).op(W.end);
    this.get(old);
    if (type === "f32") this.c.op(W.f32_reinterpret_i32);
    return this.put(type);
  }

  barrier(): void {
    invariant(false, "barriers are split into regions before instruction selection");
  }
}

// Wasm instruction selection: a RegTarget whose operands are Wasm locals. Per-thread names live in the
// thread's frame in linear memory (so they survive barrier regions); vectors are v128 (SIMD128).

import { elemOf, lanesOf, type ElemType, type ValueType } from "@poot/kernel-dsl";
import type { RegTarget } from "../common/regs.js";
import { CodegenError, invariant } from "../errors.js";
import { Atomic, Misc, Simd, W, type WasmCode } from "./code.js";
import { ValType } from "./module.js";
import { isF, WasmBase } from "./frame.js";

/** Indices of the math imports, in the fixed order of the calling convention. */
export const MATH_IMPORTS = ["exp", "log", "tanh", "erf", "sin", "cos", "f16_to_f32", "f32_to_f16"] as const;

/** Wasm instruction selection for the shared register-machine driver. */
export class WasmEmitter extends WasmBase implements RegTarget<number> {
  /** Vector locals made by splatting one scalar local (shift counts use the scalar). */
  private readonly splats = new Map<number, number>();

  constant(type: ValueType, value: number | boolean): number {
    if (isF(type)) this.c.f32(Number(value));
    else this.c.i32(typeof value === "boolean" ? (value ? 1 : 0) : Number(value) | 0);
    return this.put(type);
  }

  builtin(name: string, axis: 0 | 1 | 2 | undefined): number {
    const a = axis ?? 0;
    const [wx, wy] = this.wg;
    switch (name) {
      case "local_index":
        this.get(this.ctx.t);
        break;
      case "subgroup_id":
        this.get(this.ctx.t);
        break;
      case "subgroup_lane":
        this.c.i32(0);
        break;
      case "workgroup_id":
        this.get(this.ctx.wg[a]);
        break;
      case "num_workgroups":
        this.get(this.ctx.args).mem(W.i32_load, 2, 4 * (this.buffers + this.uniformIndex.size + a));
        break;
      case "local_id":
        // local_index = x + wx * (y + wy * z)
        if (a === 0) this.get(this.ctx.t).c.i32(wx).op(W.i32_rem_u);
        else if (a === 1) this.get(this.ctx.t).c.i32(wx).op(W.i32_div_u).i32(wy).op(W.i32_rem_u);
        else
          this.get(this.ctx.t)
            .c.i32(wx * wy)
            .op(W.i32_div_u);
        break;
      case "global_id": {
        const l = this.builtin("local_id", axis);
        this.get(this.ctx.wg[a]).c.i32(this.wg[a]).op(W.i32_mul);
        this.get(l).c.op(W.i32_add);
        break;
      }
      default:
        return this.unsupported(`builtin ${name}`);
    }
    return this.put("u32");
  }

  param(name: string, type: "u32" | "i32" | "f32"): number {
    const i = this.uniformIndex.get(name)!;
    this.get(this.ctx.args).mem(type === "f32" ? W.f32_load : W.i32_load, 2, 4 * (this.buffers + i));
    return this.put(type);
  }

  /** Pushes the byte address of element `index` of an array. */
  private address(space: string, array: string, elem: ElemType, index: number): void {
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
  private f16Widen4(): void {
    const h = this.c.local(ValType.v128);
    const em = this.c.local(ValType.v128);
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
  private f16Widen(): void {
    const h = this.c.local(ValType.i32);
    const em = this.c.local(ValType.i32);
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
  private bf16Bits(f: number): void {
    const b = this.c.local(ValType.i32);
    this.get(f).c.op(W.i32_reinterpret_f32).opU(W.local_set, b);
    this.get(b).c.i32(16).op(W.i32_shr_u).i32(0x40).op(W.i32_or); // NaN result
    this.get(b).c.i32(0x7fff).op(W.i32_add);
    this.get(b).c.i32(16).op(W.i32_shr_u).i32(1).op(W.i32_and).op(W.i32_add).i32(16).op(W.i32_shr_u); // rounded
    this.get(f).get(f).c.op(W.f32_ne); // isnan
    this.c.op(W.select);
  }

  unary(op: string, type: ValueType, a: number): number {
    const n = lanesOf(type) > 1;
    if (op === "neg") {
      if (n) this.get(a).c.simd(isF(type) ? Simd.f32x4_neg : Simd.i32x4_neg);
      else if (isF(type)) this.get(a).c.op(W.f32_neg);
      else this.c.i32(0), this.get(a).c.op(W.i32_sub);
    } else if (type === "bool") this.get(a).c.op(W.i32_eqz);
    else if (n) this.get(a).c.simd(0x4d /* v128.not */);
    else this.get(a).c.i32(-1).op(W.i32_xor);
    return this.put(type);
  }

  binary(op: string, type: ValueType, a: number, b: number): number {
    const e = elemOf(type);
    if (lanesOf(type) > 1) {
      if (op === "shl" || op === "shr") return this.vectorShift(op, type, a, b);
      const table: Record<string, number | undefined> = isF(type)
        ? { add: Simd.f32x4_add, sub: Simd.f32x4_sub, mul: Simd.f32x4_mul, div: Simd.f32x4_div }
        : {
            add: Simd.i32x4_add,
            sub: Simd.i32x4_sub,
            mul: Simd.i32x4_mul,
            and: Simd.v128_and,
            or: Simd.v128_or,
            xor: Simd.v128_xor,
          };
      const code = table[op];
      if (code === undefined) return this.unsupported(`vector ${op} on ${type}`);
      this.get(a).get(b).c.simd(code);
      return this.put(type);
    }
    if (e === "f32" && op === "rem") {
      // fmod: a - trunc(a / b) * b.
      this.get(a).get(a).get(b).c.op(W.f32_div).op(W.f32_trunc);
      this.get(b).c.op(W.f32_mul).op(W.f32_sub);
      return this.put(type);
    }
    const f: Record<string, number> = { add: W.f32_add, sub: W.f32_sub, mul: W.f32_mul, div: W.f32_div };
    const s = e === "i32";
    const i: Record<string, number> = {
      add: W.i32_add,
      sub: W.i32_sub,
      mul: W.i32_mul,
      div: s ? W.i32_div_s : W.i32_div_u,
      rem: s ? W.i32_rem_s : W.i32_rem_u,
      and: W.i32_and,
      or: W.i32_or,
      xor: W.i32_xor,
      shl: W.i32_shl,
      shr: s ? W.i32_shr_s : W.i32_shr_u, // Wasm shifts are mod 32 already.
    };
    const code = e === "f32" ? f[op] : i[op];
    if (code === undefined) return this.unsupported(`${op} on ${type}`);
    this.get(a).get(b).c.op(code);
    return this.put(type);
  }

  /**
   * Lane-wise shift of an i32x4/u32x4. Wasm shifts every lane by one scalar count, so a count made by splatting
   * one value (see {@link vec}) shifts in one instruction; other counts shift lane by lane.
   */
  private vectorShift(op: "shl" | "shr", type: ValueType, a: number, b: number): number {
    const code = op === "shl" ? Simd.i32x4_shl : elemOf(type) === "i32" ? Simd.i32x4_shr_s : Simd.i32x4_shr_u;
    const count = this.splats.get(b);
    if (count !== undefined) {
      this.get(a).get(count).c.simd(code);
      return this.put(type);
    }
    const lanes = [0, 1, 2, 3].map((l) =>
      this.binary(op, elemOf(type), this.extract(type, l, a), this.extract(type, l, b)),
    );
    return this.vec(type, lanes);
  }

  cmp(op: string, operand: ValueType, a: number, b: number): number {
    const e = elemOf(operand);
    const f: Record<string, number> = {
      eq: W.f32_eq,
      ne: W.f32_ne,
      lt: W.f32_lt,
      le: W.f32_le,
      gt: W.f32_gt,
      ge: W.f32_ge,
    };
    const s: Record<string, number> = {
      eq: W.i32_eq,
      ne: W.i32_ne,
      lt: W.i32_lt_s,
      le: W.i32_le_s,
      gt: W.i32_gt_s,
      ge: W.i32_ge_s,
    };
    const u: Record<string, number> = {
      eq: W.i32_eq,
      ne: W.i32_ne,
      lt: W.i32_lt_u,
      le: W.i32_le_u,
      gt: W.i32_gt_u,
      ge: W.i32_ge_u,
    };
    this.get(a)
      .get(b)
      .c.op((e === "f32" ? f : e === "i32" ? s : u)[op]!);
    return this.put("bool");
  }

  select(type: ValueType, cond: number, a: number, b: number): number {
    this.get(a).get(b).get(cond).c.op(W.select);
    return this.put(type);
  }

  call(fn: string, type: ValueType, args: readonly number[]): number {
    const e = elemOf(type);
    if (lanesOf(type) > 1) return this.unsupported(`vector ${fn}`);
    const [x, y, z] = args as [number, number, number];
    const imp = MATH_IMPORTS.indexOf(fn as (typeof MATH_IMPORTS)[number]);
    if (imp >= 0) {
      this.get(x).c.opU(W.call, imp);
      return this.put(type);
    }
    switch (fn) {
      case "sqrt":
        this.get(x).c.op(W.f32_sqrt);
        break;
      case "rsqrt":
        this.c.f32(1);
        this.get(x).c.op(W.f32_sqrt).op(W.f32_div);
        break;
      case "floor":
        this.get(x).c.op(W.f32_floor);
        break;
      case "fma":
        // The f64 product of two f32 is exact; one f64 add then demotion (rounding twice, rarely off by 1 ulp).
        this.get(x).c.op(W.f64_promote_f32);
        this.get(y).c.op(W.f64_promote_f32).op(W.f64_mul);
        this.get(z).c.op(W.f64_promote_f32).op(W.f64_add).op(W.f32_demote_f64);
        break;
      case "abs":
        if (e === "f32") this.get(x).c.op(W.f32_abs);
        else if (e === "u32") this.get(x);
        else this.get(x).c.i32(0), this.get(x).c.op(W.i32_sub), this.get(x).c.i32(0).op(W.i32_ge_s).op(W.select);
        break;
      case "min":
      case "max":
        if (e === "f32")
          this.get(x)
            .get(y)
            .c.op(fn === "min" ? W.f32_min : W.f32_max);
        else {
          const lt = e === "i32" ? W.i32_lt_s : W.i32_lt_u;
          this.get(x).get(y).get(x).get(y).c.op(lt);
          if (fn === "max") this.c.op(W.i32_eqz);
          this.c.op(W.select);
        }
        break;
      default:
        return this.unsupported(`math ${fn}`);
    }
    return this.put(type);
  }

  cast(from: ValueType, to: ValueType, a: number): number {
    if (lanesOf(to) > 1) return this.vectorCast(from, to, a);
    const fe = elemOf(from);
    const te = elemOf(to);
    this.get(a);
    if (te === "bool") {
      if (fe === "f32") this.c.f32(0).op(W.f32_ne);
      else if (fe !== "bool") this.c.i32(0).op(W.i32_ne);
    } else if (fe === "f32" && te !== "f32")
      this.c.misc(te === "i32" ? Misc.i32_trunc_sat_f32_s : Misc.i32_trunc_sat_f32_u);
    else if (te === "f32" && fe !== "f32") this.c.op(fe === "i32" ? W.f32_convert_i32_s : W.f32_convert_i32_u);
    return this.put(to);
  }

  /** Lane-wise cast between vec4 of f32/i32/u32 (i32 <-> u32 keeps the bits). */
  private vectorCast(from: ValueType, to: ValueType, a: number): number {
    const fe = elemOf(from),
      te = elemOf(to);
    this.get(a);
    if (te === "f32" && fe !== "f32")
      this.c.simd(fe === "i32" ? Simd.f32x4_convert_i32x4_s : Simd.f32x4_convert_i32x4_u);
    else if (fe === "f32" && te !== "f32")
      this.c.simd(te === "i32" ? Simd.i32x4_trunc_sat_f32x4_s : Simd.i32x4_trunc_sat_f32x4_u);
    if (lanesOf(to) !== 4) return this.unsupported(`cast ${from} -> ${to}`);
    return this.put(to);
  }

  bitcast(from: ValueType, to: ValueType, a: number): number {
    this.get(a);
    if (lanesOf(to) === 1 && isF(from) !== isF(to)) this.c.op(isF(to) ? W.f32_reinterpret_i32 : W.i32_reinterpret_f32);
    return this.put(to);
  }

  pack(fmt: string, a: number): number {
    const lanes = fmt.endsWith("x2") ? [this.extract("vec2<f32>", 0, a), this.extract("vec2<f32>", 1, a)] : [a];
    lanes.forEach((l, i) => {
      if (fmt.startsWith("bf16")) this.bf16Bits(l);
      else this.get(l).c.opU(W.call, MATH_IMPORTS.indexOf("f32_to_f16"));
      if (i === 1) this.c.i32(16).op(W.i32_shl).op(W.i32_or);
    });
    return this.put("u32");
  }

  unpack(fmt: string, type: ValueType, a: number): number {
    const half = (shift: number): number => {
      this.get(a);
      if (shift) this.c.i32(16).op(W.i32_shr_u);
      if (fmt.startsWith("bf16")) this.c.i32(16).op(W.i32_shl).op(W.f32_reinterpret_i32);
      else this.c.i32(0xffff).op(W.i32_and), this.f16Widen();
      return this.put("f32");
    };
    const lo = half(0);
    return type === "f32" ? lo : this.vec("vec2<f32>", [lo, half(16)]);
  }

  vec(type: ValueType, elems: readonly number[]): number {
    const f = isF(type);
    const first = elems[0]!;
    const splat = lanesOf(type) === 4 && elems.every((x) => x === first);
    this.get(first).c.simd(f ? Simd.f32x4_splat : Simd.i32x4_splat);
    if (!splat) {
      elems.forEach((x, i) => {
        if (i > 0) this.get(x).c.simdLane(f ? Simd.f32x4_replace_lane : Simd.i32x4_replace_lane, i);
      });
    }
    const v = this.put(type);
    if (splat) this.splats.set(v, first);
    return v;
  }

  extract(vecType: ValueType, lane: number, a: number): number {
    this.get(a).c.simdLane(isF(vecType) ? Simd.f32x4_extract_lane : Simd.i32x4_extract_lane, lane);
    return this.put(elemOf(vecType));
  }

  subgroup(_op: string, type: ValueType, value: number): number {
    // The CPU target's subgroups have one lane: every subgroup op returns the lane's own value.
    this.get(value);
    return this.put(type);
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
    const addr = this.c.local(ValType.i32);
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
    const old = this.c.local(ValType.i32);
    const next = this.c.local(ValType.i32);
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

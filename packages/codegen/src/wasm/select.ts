// Wasm instruction selection: a RegTarget whose operands are Wasm locals. Per-thread names live in the
// thread's frame in linear memory (so they survive barrier regions); vectors are v128 (SIMD128).

import { elemOf, lanesOf, type ValueType } from "@poot/kernel-dsl";
import type { RegTarget } from "../common/regs.js";
import { Misc, Simd, W } from "./code.js";
import { isF, MATH_IMPORTS } from "./frame.js";
import { WasmMemory } from "./memory.js";

/** Wasm instruction selection for the shared register-machine driver. */
export class WasmEmitter extends WasmMemory implements RegTarget<number> {
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
    const count = this.pool.source(b);
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
    if (splat) this.pool.link(v, first);
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
}

// A Wasm function-body emitter: locals, structured control, memory access, SIMD128 and atomics prefixes.
// Opcode values follow the WebAssembly core spec 2.0 plus the threads proposal (0xFE prefix).

import { ByteWriter } from "./bytes.js";
import type { ValType } from "./module.js";

/** Single-byte opcodes used by the lowering. */
export const W = {
  unreachable: 0x00,
  block: 0x02,
  loop: 0x03,
  if: 0x04,
  else: 0x05,
  end: 0x0b,
  br: 0x0c,
  br_if: 0x0d,
  return: 0x0f,
  call: 0x10,
  drop: 0x1a,
  select: 0x1b,
  local_get: 0x20,
  local_set: 0x21,
  local_tee: 0x22,
  i32_load: 0x28,
  f32_load: 0x2a,
  i32_load8_s: 0x2c,
  i32_load8_u: 0x2d,
  i32_load16_s: 0x2e,
  i32_load16_u: 0x2f,
  i32_store: 0x36,
  f32_store: 0x38,
  i32_store8: 0x3a,
  i32_store16: 0x3b,
  i32_const: 0x41,
  f32_const: 0x43,
  i32_eqz: 0x45,
  i32_eq: 0x46,
  i32_ne: 0x47,
  i32_lt_s: 0x48,
  i32_lt_u: 0x49,
  i32_gt_s: 0x4a,
  i32_gt_u: 0x4b,
  i32_le_s: 0x4c,
  i32_le_u: 0x4d,
  i32_ge_s: 0x4e,
  i32_ge_u: 0x4f,
  f32_eq: 0x5b,
  f32_ne: 0x5c,
  f32_lt: 0x5d,
  f32_gt: 0x5e,
  f32_le: 0x5f,
  f32_ge: 0x60,
  i32_add: 0x6a,
  i32_sub: 0x6b,
  i32_mul: 0x6c,
  i32_div_s: 0x6d,
  i32_div_u: 0x6e,
  i32_rem_s: 0x6f,
  i32_rem_u: 0x70,
  i32_and: 0x71,
  i32_or: 0x72,
  i32_xor: 0x73,
  i32_shl: 0x74,
  i32_shr_s: 0x75,
  i32_shr_u: 0x76,
  f32_abs: 0x8b,
  f32_neg: 0x8c,
  f32_ceil: 0x8d,
  f32_floor: 0x8e,
  f32_trunc: 0x8f,
  f32_nearest: 0x90,
  f32_sqrt: 0x91,
  f32_add: 0x92,
  f32_sub: 0x93,
  f32_mul: 0x94,
  f32_div: 0x95,
  f32_min: 0x96,
  f32_max: 0x97,
  i32_trunc_f32_s: 0xa8,
  f32_convert_i32_s: 0xb2,
  f32_convert_i32_u: 0xb3,
  i32_reinterpret_f32: 0xbc,
  f32_reinterpret_i32: 0xbe,
  f64_add: 0xa0,
  f64_mul: 0xa2,
  f32_demote_f64: 0xb6,
  f64_promote_f32: 0xbb,
} as const;

/** 0xFC-prefixed sub-opcodes: saturating truncation and bulk memory. */
export const Misc = { i32_trunc_sat_f32_s: 0x00, i32_trunc_sat_f32_u: 0x01, memory_fill: 0x0b } as const;

/** SIMD128 sub-opcodes (after the 0xFD prefix, LEB128-encoded). */
export const Simd = {
  v128_load: 0x00,
  v128_store: 0x0b,
  i32x4_splat: 0x11,
  i32x4_extract_lane: 0x1b,
  i32x4_replace_lane: 0x1c,
  f32x4_splat: 0x13,
  f32x4_extract_lane: 0x1f,
  f32x4_replace_lane: 0x20,
  i32x4_neg: 0xa1,
  i32x4_add: 0xae,
  i32x4_sub: 0xb1,
  i32x4_mul: 0xb5,
  f32x4_abs: 0xe0,
  f32x4_neg: 0xe1,
  f32x4_sqrt: 0xe3,
  f32x4_add: 0xe4,
  f32x4_sub: 0xe5,
  f32x4_mul: 0xe6,
  f32x4_div: 0xe7,
  f32x4_min: 0xe8,
  f32x4_max: 0xe9,
  v128_load32_zero: 0x5c,
  v128_load64_zero: 0x5d,
  v128_and: 0x4e,
  v128_or: 0x50,
  v128_xor: 0x51,
  v128_bitselect: 0x52,
  i32x4_ge_s: 0x3f,
  i16x8_extend_low_i8x16_s: 0x87,
  i16x8_extend_low_i8x16_u: 0x89,
  i32x4_extend_low_i16x8_s: 0xa7,
  i32x4_extend_low_i16x8_u: 0xa9,
  i32x4_shl: 0xab,
  i32x4_shr_s: 0xac,
  i32x4_shr_u: 0xad,
  i32x4_trunc_sat_f32x4_s: 0xf8,
  i32x4_trunc_sat_f32x4_u: 0xf9,
  f32x4_convert_i32x4_s: 0xfa,
  f32x4_convert_i32x4_u: 0xfb,
} as const;

/** Threads-proposal atomic sub-opcodes (after the 0xFE prefix). */
export const Atomic = {
  notify: 0x00,
  wait32: 0x01,
  fence: 0x03,
  i32_load: 0x10,
  i32_store: 0x17,
  i32_rmw_add: 0x1e,
  i32_rmw_sub: 0x25,
  i32_rmw_and: 0x2c,
  i32_rmw_or: 0x33,
  i32_rmw_xor: 0x3a,
  i32_rmw_xchg: 0x41,
  i32_rmw_cmpxchg: 0x48,
} as const;

/** Block type "no result". */
export const EMPTY_BLOCK = 0x40;

/**
 * One function body. Parameters occupy the first local indices; {@link local} allocates more.
 * Emission is a flat instruction stream; structured control is the caller's `block`/`loop`/`end`.
 */
export class WasmCode {
  private readonly w = new ByteWriter();
  private readonly locals: ValType[] = [];

  constructor(private readonly paramCount: number) {}

  /** Allocates a local of type `t`; returns its index. */
  local(t: ValType): number {
    this.locals.push(t);
    return this.paramCount + this.locals.length - 1;
  }

  /** Emits a plain opcode. */
  op(code: number): this {
    this.w.byte(code);
    return this;
  }
  /** Emits an opcode with one unsigned LEB immediate (local/br/call indices). */
  opU(code: number, imm: number): this {
    this.w.byte(code).u32(imm);
    return this;
  }
  /** i32.const. */
  i32(v: number): this {
    this.w.byte(W.i32_const).s32(v);
    return this;
  }
  /** f32.const. */
  f32(v: number): this {
    this.w.byte(W.f32_const).f32(v);
    return this;
  }
  /** A load or store with its memarg (alignment as log2 bytes, constant offset). */
  mem(code: number, alignLog2: number, offset = 0): this {
    this.w.byte(code).u32(alignLog2).u32(offset);
    return this;
  }
  /** A SIMD op (0xFD prefix). */
  simd(sub: number): this {
    this.w.byte(0xfd).u32(sub);
    return this;
  }
  /** A SIMD memory op with memarg. */
  simdMem(sub: number, alignLog2: number, offset = 0): this {
    this.w.byte(0xfd).u32(sub).u32(alignLog2).u32(offset);
    return this;
  }
  /** A raw immediate byte (lane indices of load/store-lane ops). */
  raw(b: number): this {
    this.w.byte(b);
    return this;
  }
  /** A SIMD lane op (extract/replace) with its lane index byte. */
  simdLane(sub: number, lane: number): this {
    this.w.byte(0xfd).u32(sub).byte(lane);
    return this;
  }
  /** An atomic memory op (0xFE prefix) with memarg; atomics require natural alignment. */
  atomic(sub: number, alignLog2: number, offset = 0): this {
    this.w.byte(0xfe).u32(sub).u32(alignLog2).u32(offset);
    return this;
  }
  /** A 0xFC-prefixed op; memory.fill carries its memory index byte. */
  misc(sub: number): this {
    this.w.byte(0xfc).u32(sub);
    if (sub === Misc.memory_fill) this.w.byte(0);
    return this;
  }
  /** atomic.fence (0xFE 0x03 0x00). */
  fence(): this {
    this.w.byte(0xfe).u32(Atomic.fence).byte(0);
    return this;
  }
  /** Opens `block`/`loop`/`if` with an empty block type. */
  open(code: typeof W.block | typeof W.loop | typeof W.if): this {
    this.w.byte(code).byte(EMPTY_BLOCK);
    return this;
  }

  /** @internal The body: local declarations (run-length grouped) then code then `end`. */
  encodeBody(): Uint8Array {
    const out = new ByteWriter();
    const groups: [number, ValType][] = [];
    for (const t of this.locals) {
      const last = groups[groups.length - 1];
      if (last && last[1] === t) last[0]++;
      else groups.push([1, t]);
    }
    out.u32(groups.length);
    for (const [n, t] of groups) out.u32(n).byte(t);
    out.bytes(this.w.finish()).byte(W.end);
    return out.finish();
  }
}

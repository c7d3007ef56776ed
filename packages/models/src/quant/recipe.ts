// Decode recipes as DATA: per-element expression trees over a block's bytes (loads, integer bit ops,
// f32 arithmetic), the shape graph-ir's PackedFormat will take; an interpreter checks them against decodeBlock.
import { invariant } from "../errors.js";
import { bf16ToF32, f16ToF32 } from "../halfs.js";
import type { GGMLTypeName } from "./format.js";

/** Scalar loads at a byte offset within the block (little-endian). `f16`/`bf16`/`f32` yield f32 values. */
export type LoadKind = "u8" | "i8" | "u16" | "f16" | "bf16" | "f32";
/** Integer binary ops (`div`/`mod` floor on non-negative operands; `lt` yields 0/1). */
export type IntOp = "add" | "sub" | "mul" | "div" | "mod" | "shl" | "shr" | "and" | "or" | "lt";
/** f32 binary ops; each result is rounded to f32. */
export type FloatOp = "fadd" | "fsub" | "fmul";

/** A node of a decode recipe. `elem` is the element's index within the block. */
export type RecipeExpr =
  | { readonly op: "elem" }
  | { readonly op: "int"; readonly value: number }
  | { readonly op: "load"; readonly kind: LoadKind; readonly offset: RecipeExpr }
  | { readonly op: IntOp; readonly a: RecipeExpr; readonly b: RecipeExpr }
  | { readonly op: "select"; readonly cond: RecipeExpr; readonly a: RecipeExpr; readonly b: RecipeExpr }
  | { readonly op: "tof32"; readonly a: RecipeExpr }
  | { readonly op: "f32const"; readonly value: number }
  | { readonly op: FloatOp; readonly a: RecipeExpr; readonly b: RecipeExpr };

/** A format's decode as data: element `e` of a block is `value` evaluated with elem = e. */
export interface DecodeRecipe {
  readonly format: GGMLTypeName;
  readonly blockElems: number;
  readonly blockBytes: number;
  readonly value: RecipeExpr;
}

type E = RecipeExpr;
const n = (value: number): E => ({ op: "int", value });
const x = (v: E | number): E => (typeof v === "number" ? n(v) : v);
const bin =
  (op: IntOp) =>
  (a: E | number, b: E | number): E => ({ op, a: x(a), b: x(b) });
const add = bin("add"),
  sub = bin("sub"),
  mul = bin("mul"),
  div = bin("div"),
  mod = bin("mod");
const shl = bin("shl"),
  shr = bin("shr"),
  and = bin("and"),
  or = bin("or"),
  lt = bin("lt");
const load = (kind: LoadKind, offset: E | number): E => ({ op: "load", kind, offset: x(offset) });
const u8 = (o: E | number) => load("u8", o);
const f = (a: E): E => ({ op: "tof32", a });
const fmul = (a: E, b: E): E => ({ op: "fmul", a, b });
const fadd = (a: E, b: E): E => ({ op: "fadd", a, b });
const fsub = (a: E, b: E): E => ({ op: "fsub", a, b });
const sel = (cond: E, a: E, b: E): E => ({ op: "select", cond, a, b });
const I: E = { op: "elem" };
const fc = (value: number): E => ({ op: "f32const", value });

// A table of k entries indexed by `q` (0..k-1) as a balanced tree of selects: formats stay expressions, no table op.
const tree = (q: E, leaf: (i: number) => E, lo: number, hi: number): E => {
  if (lo === hi) return leaf(lo);
  const mid = (lo + hi + 1) >> 1;
  return sel(lt(q, mid), tree(q, leaf, lo, mid - 1), tree(q, leaf, mid, hi));
};
const table = (levels: readonly number[], q: E): E => tree(q, (i) => n(levels[i]!), 0, levels.length - 1);
const IQ4NL = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];
// MXFP4 level of nibble q: magnitude m = q & 7 is 0..3 or (2 + (m & 1)) << ((m >> 1) − 1); bit 3 is the sign.
const fp4 = (q: E): E => {
  const m = and(q, 7);
  const mag = sel(lt(m, 4), m, shl(add(2, and(m, 1)), sub(shr(m, 1), 1)));
  return sel(lt(q, 8), mag, sub(0, mag));
};
// 2^(e − 128) for the E8M0 byte at `at`: 2^(e & 31) times 2^(32·(e >> 5) − 128), the latter split in two factors
// for e < 32 so that no constant is subnormal.
const e8m0Half = (at: number): E => {
  const e = u8(at),
    j = shr(e, 5);
  const scale = tree(j, (i) => fc(i === 0 ? 2 ** -64 : 2 ** (32 * i - 128)), 0, 7);
  return fmul(fmul(f(shl(1, and(e, 31))), scale), sel(lt(j, 1), fc(2 ** -64), fc(1)));
};

// 32-element formats: element i reads nibble (i div 16) of byte (i mod 16).
const nib = (qs: number) => and(shr(u8(add(qs, mod(I, 16))), mul(4, div(I, 16))), 15);
const qh5 = (qh: number) => shl(and(shr(u8(add(qh, div(I, 8))), mod(I, 8)), 1), 4);
// Q4_K/Q5_K 6-bit scale/min of sub-block s from the 12-byte field at `at` (get_scale_min_k4).
const scK4 = (at: number, s: E) =>
  sel(lt(s, 4), and(u8(add(at, s)), 63), or(and(u8(add(at + 4, s)), 15), shl(shr(u8(add(at - 4, s)), 6), 4)));
const mnK4 = (at: number, s: E) =>
  sel(lt(s, 4), and(u8(add(at + 4, s)), 63), or(shr(u8(add(at + 4, s)), 4), shl(shr(u8(add(at, s)), 6), 4)));
// K-quant positions: 256 = 2 halves of 128 (n) x 4 groups of 32 (k) x 32 lanes (l).
const hN = div(I, 128),
  kK = div(mod(I, 128), 32),
  lL = mod(I, 32);

/** Decode recipes of every supported format, equal bit for bit to the reference decoders. */
export const QUANT_RECIPES: Readonly<Record<GGMLTypeName, DecodeRecipe>> = {
  F32: { format: "F32", blockElems: 1, blockBytes: 4, value: load("f32", 0) },
  F16: { format: "F16", blockElems: 1, blockBytes: 2, value: load("f16", 0) },
  BF16: { format: "BF16", blockElems: 1, blockBytes: 2, value: load("bf16", 0) },
  Q4_0: { format: "Q4_0", blockElems: 32, blockBytes: 18, value: fmul(f(sub(nib(2), 8)), load("f16", 0)) },
  Q4_1: {
    format: "Q4_1",
    blockElems: 32,
    blockBytes: 20,
    value: fadd(fmul(f(nib(4)), load("f16", 0)), load("f16", 2)),
  },
  Q5_0: { format: "Q5_0", blockElems: 32, blockBytes: 22, value: fmul(f(sub(or(nib(6), qh5(2)), 16)), load("f16", 0)) },
  Q5_1: {
    format: "Q5_1",
    blockElems: 32,
    blockBytes: 24,
    value: fadd(fmul(f(or(nib(8), qh5(4))), load("f16", 0)), load("f16", 2)),
  },
  Q8_0: { format: "Q8_0", blockElems: 32, blockBytes: 34, value: fmul(f(load("i8", add(2, I))), load("f16", 0)) },
  Q2_K: (() => {
    const sc = u8(div(I, 16));
    const q = and(shr(u8(add(add(16, mul(32, hN)), lL)), mul(2, kK)), 3);
    return {
      format: "Q2_K" as const,
      blockElems: 256,
      blockBytes: 84,
      value: fsub(fmul(fmul(load("f16", 80), f(and(sc, 15))), f(q)), fmul(load("f16", 82), f(shr(sc, 4)))),
    };
  })(),
  Q3_K: (() => {
    const s = div(I, 16);
    const low = and(shr(u8(add(96, mod(s, 8))), mul(4, div(s, 8))), 15);
    const high = and(shr(u8(add(104, mod(s, 4))), mul(2, div(s, 4))), 3);
    const q2 = and(shr(u8(add(add(32, mul(32, hN)), lL)), mul(2, kK)), 3);
    const hbit = and(shr(u8(lL), add(mul(4, hN), kK)), 1);
    const v = add(sub(q2, 4), mul(4, hbit));
    return {
      format: "Q3_K" as const,
      blockElems: 256,
      blockBytes: 110,
      value: fmul(fmul(load("f16", 108), f(sub(or(low, shl(high, 4)), 32))), f(v)),
    };
  })(),
  Q4_K: (() => {
    const s = div(I, 32);
    const q = and(shr(u8(add(add(16, mul(32, div(I, 64))), lL)), mul(4, mod(s, 2))), 15);
    return {
      format: "Q4_K" as const,
      blockElems: 256,
      blockBytes: 144,
      value: fsub(fmul(fmul(load("f16", 0), f(scK4(4, s))), f(q)), fmul(load("f16", 2), f(mnK4(4, s)))),
    };
  })(),
  Q5_K: (() => {
    const s = div(I, 32);
    const q = add(
      and(shr(u8(add(add(48, mul(32, div(I, 64))), lL)), mul(4, mod(s, 2))), 15),
      mul(16, and(shr(u8(add(16, lL)), s), 1)),
    );
    return {
      format: "Q5_K" as const,
      blockElems: 256,
      blockBytes: 176,
      value: fsub(fmul(fmul(load("f16", 0), f(scK4(4, s))), f(q)), fmul(load("f16", 2), f(mnK4(4, s)))),
    };
  })(),
  Q6_K: (() => {
    const ql = and(shr(u8(add(add(mul(64, hN), lL), mul(32, and(kK, 1)))), mul(4, shr(kK, 1))), 15);
    const qh = and(shr(u8(add(add(128, mul(32, hN)), lL)), mul(2, kK)), 3);
    const sc = load("i8", add(add(add(192, mul(8, hN)), div(lL, 16)), mul(2, kK)));
    return {
      format: "Q6_K" as const,
      blockElems: 256,
      blockBytes: 210,
      value: fmul(fmul(load("f16", 208), f(sc)), f(sub(or(ql, shl(qh, 4)), 32))),
    };
  })(),
  IQ4_NL: { format: "IQ4_NL", blockElems: 32, blockBytes: 18, value: fmul(load("f16", 0), f(table(IQ4NL, nib(2)))) },
  IQ4_XS: (() => {
    const ib = div(I, 32),
      j = mod(I, 32);
    const q = and(shr(u8(add(add(8, mul(16, ib)), mod(j, 16))), mul(4, div(j, 16))), 15);
    const ls = or(
      and(shr(u8(add(4, div(ib, 2))), mul(4, mod(ib, 2))), 15),
      shl(and(shr(load("u16", 2), mul(2, ib)), 3), 4),
    );
    return {
      format: "IQ4_XS" as const,
      blockElems: 256,
      blockBytes: 136,
      value: fmul(fmul(load("f16", 0), f(sub(ls, 32))), f(table(IQ4NL, q))),
    };
  })(),
  MXFP4: { format: "MXFP4", blockElems: 32, blockBytes: 17, value: fmul(f(fp4(nib(1))), e8m0Half(0)) },
};

const f32buf = new Float32Array(1);
const u8buf = new Uint8Array(f32buf.buffer);

/** Interprets `e` for element `elem` of the block at `bytes[base..]` (integers exact, floats rounded to f32). */
export function evalRecipeExpr(e: RecipeExpr, bytes: Uint8Array, base: number, elem: number): number {
  const ev = (y: RecipeExpr) => evalRecipeExpr(y, bytes, base, elem);
  switch (e.op) {
    case "elem":
      return elem;
    case "int":
      return e.value;
    case "load": {
      const o = base + ev(e.offset);
      invariant(Number.isInteger(o) && o >= base, "recipe load offset must be a non-negative integer");
      switch (e.kind) {
        case "u8":
          return bytes[o]!;
        case "i8":
          return (bytes[o]! << 24) >> 24;
        case "u16":
          return bytes[o]! | (bytes[o + 1]! << 8);
        case "f16":
          return f16ToF32(bytes[o]! | (bytes[o + 1]! << 8));
        case "bf16":
          return bf16ToF32(bytes[o]! | (bytes[o + 1]! << 8));
        case "f32":
          u8buf.set(bytes.subarray(o, o + 4));
          return f32buf[0]!;
        default:
          return e.kind satisfies never;
      }
    }
    case "add":
      return ev(e.a) + ev(e.b);
    case "sub":
      return ev(e.a) - ev(e.b);
    case "mul":
      return ev(e.a) * ev(e.b);
    case "div":
      return Math.floor(ev(e.a) / ev(e.b));
    case "mod":
      return ev(e.a) % ev(e.b);
    case "shl":
      return (ev(e.a) << ev(e.b)) >>> 0; // the u32 pattern, as graph-ir's recipes
    case "shr":
      return ev(e.a) >>> ev(e.b);
    case "and":
      return ev(e.a) & ev(e.b);
    case "or":
      return ev(e.a) | ev(e.b);
    case "lt":
      return ev(e.a) < ev(e.b) ? 1 : 0;
    case "select":
      return ev(e.cond) !== 0 ? ev(e.a) : ev(e.b);
    case "tof32":
      return Math.fround(ev(e.a));
    case "f32const":
      return Math.fround(e.value);
    case "fadd":
      return Math.fround(ev(e.a) + ev(e.b));
    case "fsub":
      return Math.fround(ev(e.a) - ev(e.b));
    case "fmul":
      return Math.fround(ev(e.a) * ev(e.b));
    default:
      return e satisfies never;
  }
}

/** Decodes one block by interpreting its recipe (slow; the plain decoders are the fast reference). */
export function decodeBlockByRecipe(
  r: DecodeRecipe,
  bytes: Uint8Array,
  offset: number,
  out: Float32Array,
  outOffset: number,
): void {
  for (let i = 0; i < r.blockElems; i++) out[outOffset + i] = evalRecipeExpr(r.value, bytes, offset, i);
}

// A packed format's decode recipe compiled for a known element index (CPU kernels unroll the block): everything that
// depends only on i and constants folds at generation time, byte loads read a u8 buffer at constant offsets, and
// equal subtrees (a sub-block's scale) are emitted once per block.

import type { Arr, Builder, Val } from "@poot/kernel-dsl";
import type { DecodeExpr, PackedFormat } from "@poot/graph-ir";
import { KernelgenError } from "../errors.js";

type Kind = "i32" | "u32" | "f32";
type V = Val<Kind>;
/** A value known at generation time (with the recipe type it would have), or an emitted IR value. */
type C = { readonly c: number; readonly t: Kind } | V;

const isConst = (x: C): x is { c: number; t: Kind } => "c" in x;
/** The IR value of a non-constant (callers test {@link isConst} first). */
const dyn = (x: C): V => x as V;
const f = Math.fround;

/** Floor division / modulo of integers, as the reference decoder computes them (division by zero gives 0). */
function floorDivMod(x: number, y: number, op: "idiv" | "mod"): number {
  if (y === 0) return 0;
  const q = Math.floor(x / y);
  return op === "idiv" ? q | 0 : (x - q * y) | 0;
}

/** Folds a binary op on two known values following the recipe's integer/float typing rules. */
function fold(op: string, a: { c: number; t: Kind }, b: { c: number; t: Kind }): { c: number; t: Kind } | undefined {
  if (op === "shl" || op === "shr" || op === "and" || op === "or" || op === "xor") {
    const x = a.c >>> 0,
      y = b.c >>> 0;
    const r =
      op === "shl" ? x << (y & 31) : op === "shr" ? x >>> (y & 31) : op === "and" ? x & y : op === "or" ? x | y : x ^ y;
    return { c: r >>> 0, t: "u32" };
  }
  if (op === "div" || a.t === "f32" || b.t === "f32") {
    const x = f(a.c),
      y = f(b.c);
    switch (op) {
      case "add":
        return { c: f(x + y), t: "f32" };
      case "sub":
        return { c: f(x - y), t: "f32" };
      case "mul":
        return { c: f(x * y), t: "f32" };
      case "div":
        return { c: f(x / y), t: "f32" };
      case "lt":
        return { c: x < y ? 1 : 0, t: "i32" };
      default:
        return undefined; // float idiv/mod/min/max: emitted, as the general decoder does
    }
  }
  const x = a.t === "u32" ? a.c | 0 : a.c,
    y = b.t === "u32" ? b.c | 0 : b.c;
  switch (op) {
    case "add":
      return { c: (x + y) | 0, t: "i32" };
    case "sub":
      return { c: (x - y) | 0, t: "i32" };
    case "mul":
      return { c: Math.imul(x, y), t: "i32" };
    case "idiv":
    case "mod":
      return { c: floorDivMod(x, y, op), t: "i32" };
    case "lt":
      return { c: x < y ? 1 : 0, t: "i32" };
    case "min":
      return { c: Math.min(x, y), t: "i32" };
    case "max":
      return { c: Math.max(x, y), t: "i32" };
    default:
      return undefined;
  }
}

/** A decoder whose `element(i)` takes a literal index; `block(base)` starts a block at byte `base` of `bytes`. */
export interface UnrolledDecoder {
  /** Starts the block at byte `base` (forgets the previous block's values). */
  block(base: Val<"u32">): void;
  /** Emits (or reuses) the decode of element `i` (0 ≤ i < blockSize) of the current block. */
  element(i: number): Val<"f32">;
  /**
   * Emits the decode of elements `i0` … `i0 + 3` as one vec4<f32> (needs `load4`: SIMD caps). Each lane computes
   * exactly what `element` computes for it; the recipe is vectorized across the four lanes (see {@link lanes4}).
   */
  element4(i0: number): Val<"vec4<f32>">;
  /**
   * Emits the decode of elements `i0` … `i0 + lanes - 1` as one vector of `lanes` f32 (8 or 16 need a target whose
   * caps report that many `vectorLanes`, decision 2310), as {@link UnrolledDecoder.element4} does for four.
   */
  elementN<N extends 4 | 8 | 16>(i0: number, lanes: N): Val<`vec${N}<f32>`>;
}

type VKind = `vec${4 | 8 | 16}<${Kind}>`;
/**
 * A recipe value over four consecutive elements: the same for every lane (`u`, a scalar C), known per lane at
 * generation time (`cs`), or an emitted vec4 (`v`, with the recipe type of its lanes).
 */
type L4 =
  | { readonly u: C }
  | { readonly cs: readonly number[]; readonly t: Kind }
  | { readonly v: Val<VKind>; readonly t: Kind; readonly max?: number };
/** Thrown inside element4 for a recipe node it does not vectorize; element4 then builds the vector lane by lane. */
class NotLanewise extends Error {}

/**
 * Builds the unrolled decoder of `fmt` over a u8 buffer. `binary` is the general decoder's lowering of one op on IR
 * values (same typing rules), used for whatever does not fold.
 */
export function unrolledDecoder(
  b: Builder,
  fmt: PackedFormat,
  bytes: Arr<"u32">,
  binary: (op: string, a: V, b: V) => V,
): UnrolledDecoder {
  const { let_, u32, i32, f32, select, unpack } = b;
  let base: Val<"u32"> = u32(0);
  const memo = new Map<string, V>();
  const ids = new Map<V, number>();
  const key = (x: C): string =>
    isConst(x) ? `${x.t}:${x.c}` : `v${ids.get(dyn(x)) ?? ids.set(dyn(x), ids.size).size - 1}`;
  const bind = (k: string, make: () => V): V => {
    let v = memo.get(k);
    if (v === undefined) {
      v = let_(make(), "dq") as V;
      memo.set(k, v);
    }
    return v;
  };
  const val = (x: C): V => (isConst(x) ? (x.t === "f32" ? f32(x.c) : x.t === "u32" ? u32(x.c) : i32(x.c)) : dyn(x));
  const byte = (off: C): Val<"u32"> =>
    bind(`b@${key(off)}`, () =>
      bytes.at(isConst(off) ? base.add(off.c) : base.add(val(off) as Val<"u32">)),
    ) as Val<"u32">;
  const plus = (off: C, k: number): C => (isConst(off) ? { c: off.c + k, t: "i32" } : binary("add", off as V, i32(k)));
  const load = (type: string, off: C): V => {
    const u16 = (): Val<"u32"> => byte(off).or(byte(plus(off, 1)).shl(8));
    switch (type) {
      case "u8":
        return byte(off).bitcast("i32");
      case "i8":
        return byte(off).shl(24).bitcast("i32").shr(24);
      case "u16":
        return u16().bitcast("i32");
      case "i16":
        return u16().shl(16).bitcast("i32").shr(16);
      case "u32":
        return u16()
          .or(byte(plus(off, 2)).shl(16))
          .or(byte(plus(off, 3)).shl(24));
      case "f16":
        return unpack("f16", u16());
      case "bf16":
        return unpack("bf16", u16());
      case "f32":
        return u16()
          .or(byte(plus(off, 2)).shl(16))
          .or(byte(plus(off, 3)).shl(24))
          .bitcast("f32");
      default:
        throw new KernelgenError("bad_format", `format ${fmt.name}: unknown load type ${type}`, {
          synth: "decode",
          param: "format",
        });
    }
  };
  const nonzero = (v: V): Val<"bool"> =>
    (v as Val<"f32">).ne((v.type === "f32" ? f32(0) : v.type === "i32" ? i32(0) : u32(0)) as unknown as Val<"f32">);
  const toF32 = (v: V): Val<"f32"> => (v.type === "f32" ? (v as Val<"f32">) : v.cast("f32"));
  const emit = (e: DecodeExpr, i: number, env: ReadonlyMap<string, C>): C => {
    switch (e.op) {
      case "const":
        return { c: e.value, t: Number.isInteger(e.value) && Math.abs(e.value) < 2 ** 31 ? "i32" : "f32" };
      case "i":
        return { c: i, t: "i32" };
      case "var":
        return env.get(e.name) as C;
      case "let":
        return emit(e.body, i, new Map([...env, [e.name, emit(e.value, i, env)]]));
      case "load": {
        const off = emit(e.offset, i, env);
        return bind(`ld${e.type}@${key(off)}`, () => load(e.type, off));
      }
      case "f32": {
        const a = emit(e.a, i, env);
        if (isConst(a)) return { c: f(a.t === "u32" ? a.c >>> 0 : a.c), t: "f32" };
        return bind(`f32(${key(a)})`, () => toF32(dyn(a)));
      }
      case "select": {
        const c = emit(e.cond, i, env),
          x = emit(e.a, i, env),
          y = emit(e.b, i, env);
        if (isConst(c)) return c.c !== 0 ? x : y;
        return bind(`sel(${key(c)},${key(x)},${key(y)})`, () => {
          const xv = val(x),
            yv = val(y);
          return xv.type === yv.type
            ? select(nonzero(c as V), xv as Val<"f32">, yv as Val<"f32">)
            : select(nonzero(c as V), toF32(xv), toF32(yv));
        });
      }
      default: {
        const x = emit(e.a, i, env),
          y = emit(e.b, i, env);
        if (isConst(x) && isConst(y)) {
          const r = fold(e.op, x, y);
          if (r !== undefined) return r;
        }
        return bind(`${e.op}(${key(x)},${key(y)})`, () => binary(e.op, val(x), val(y)));
      }
    }
  };
  const lanes4 = vectorizer(
    b,
    bytes,
    bind,
    key,
    val,
    (e, i, env) => emit(e, i, env),
    (op, x, y) => {
      if (isConst(x) && isConst(y)) {
        const r = fold(op, x, y);
        if (r !== undefined) return r;
      }
      return bind(`${op}(${key(x)},${key(y)})`, () => binary(op, val(x), val(y)));
    },
    () => base,
  );
  const element = (i: number): Val<"f32"> => {
    const v = emit(fmt.decode, i, new Map());
    return isConst(v) ? f32(v.t === "u32" ? v.c >>> 0 : v.c) : toF32(dyn(v));
  };
  return {
    block(b0) {
      base = b0;
      memo.clear();
      ids.clear();
    },
    element,
    element4(i0) {
      return this.elementN(i0, 4);
    },
    elementN<N extends 4 | 8 | 16>(i0: number, n: N): Val<`vec${N}<f32>`> {
      try {
        return lanes4(fmt.decode, i0, n) as Val<`vec${N}<f32>`>;
      } catch (err) {
        if (!(err instanceof NotLanewise)) throw err;
        const t = `vec${n}<f32>` as const;
        return b.vec(t, ...Array.from({ length: n }, (_, j) => element(i0 + j))) as Val<`vec${N}<f32>`>;
      }
    },
  };
}

/**
 * Vectorizes a recipe across elements i0 … i0 + lanes - 1 (i0 a multiple of lanes): subtrees equal in every lane stay scalar (the
 * scalar decoder's `emit`, memoized per block), lane-varying integer constants fold per lane, a u8/i8 load at four
 * consecutive offsets becomes one `load4`, and the ops of the recipe apply lane-wise with its typing rules (bit ops
 * on u32, float if either side is f32, else i32). Anything else (a lane-varying select, idiv, min, a gather) throws
 * NotLanewise. Each lane computes exactly the scalar decoder's value for its element.
 */
function vectorizer(
  b: Builder,
  bytes: Arr<"u32">,
  bind: (k: string, make: () => V) => V,
  key: (x: C) => string,
  val: (x: C) => V,
  emitScalar: (e: DecodeExpr, i: number, env: ReadonlyMap<string, C>) => C,
  binaryScalar: (op: string, x: C, y: C) => C,
  base: () => Val<"u32">,
): (e: DecodeExpr, i0: number, lanes: 4 | 8 | 16) => Val<VKind> {
  /** The lanes of the vector being built (4, 8 or 16). */
  let L: 4 | 8 | 16 = 4;
  const VEC = (t: Kind): VKind => `vec${L}<${t}>`;
  const vkeys = new Map<object, string>();
  const keyOf = (x: L4): string => {
    if ("u" in x) return `u${key(x.u)}`;
    if ("cs" in x) return `c${x.t}[${x.cs.join(",")}]`;
    let k = vkeys.get(x.v);
    if (k === undefined) vkeys.set(x.v, (k = `v${vkeys.size}`));
    return k;
  };
  const vb = (k: string, make: () => Val<VKind>): Val<VKind> =>
    bind(`${L}:${k}`, make as unknown as () => V) as unknown as Val<VKind>;
  const vbind = (k: string, t: Kind, make: () => Val<VKind>, max?: number): L4 => ({
    v: vb(k, make),
    t,
    ...(max === undefined ? {} : { max }),
  });
  /** Same value in every lane: one scalar. */
  const norm = (cs: readonly number[], t: Kind): L4 =>
    cs.every((c) => c === cs[0]) ? { u: { c: cs[0] as number, t } } : { cs, t };
  const kindOf = (x: L4): Kind => ("u" in x ? (isConst(x.u) ? x.u.t : (dyn(x.u).type as Kind)) : x.t);
  /** The vec4 of `x` with lane type `t` (converted as the scalar decoder's toF32/toU32/toI32 would). */
  const asVec = (x: L4, t: Kind): Val<VKind> => {
    if ("v" in x) {
      if (x.t === t) return x.v;
      // u32 lanes known to be < 2^31 convert as i32 (the same values; Wasm's signed convert is one instruction).
      if (t === "f32")
        return vb(`f32(${keyOf(x)})`, () =>
          (x.t === "u32" && x.max !== undefined && x.max < 2 ** 31 ? x.v.bitcast(VEC("i32")) : x.v).cast(VEC("f32")),
        );
      if (x.t === "f32") throw new NotLanewise();
      return vb(`${t}(${keyOf(x)})`, () => x.v.bitcast(VEC(t)));
    }
    const lanes = "u" in x ? Array.from({ length: L }, () => x.u) : x.cs.map((c) => ({ c, t: x.t }) as C);
    // A splat names its scalar once, so every lane reads one value (the Wasm target then shifts by a scalar count).
    const same = lanes.every((l) => key(l) === key(lanes[0] as C));
    return vb(`splat${t}(${lanes.map(key).join(",")})`, () => {
      if (!same) return b.vec(VEC(t), ...lanes.map((l) => scalarAs(val(l), t)));
      const s1 = b.let_(scalarAs(val(lanes[0] as C), t), "sp");
      return b.vec(VEC(t), ...Array.from({ length: L }, () => s1));
    });
  };
  const scalarAs = (v: V, t: Kind): V => {
    if (v.type === t) return v;
    if (t === "f32") return v.cast("f32");
    if (v.type === "f32") throw new NotLanewise();
    return v.bitcast(t);
  };
  const lanewise = (op: string, x: L4, y: L4): L4 => {
    const bits = op === "shl" || op === "shr" || op === "and" || op === "or" || op === "xor";
    const t: Kind = bits ? "u32" : op === "div" || kindOf(x) === "f32" || kindOf(y) === "f32" ? "f32" : "i32";
    if (!["add", "sub", "mul", "div", "and", "or", "xor", "shl", "shr"].includes(op) || (op === "div" && t !== "f32"))
      throw new NotLanewise();
    const a = asVec(x, t),
      c = asVec(y, t);
    return vbind(
      `${op}(${keyOf(x)},${keyOf(y)})`,
      t,
      () => {
        switch (op) {
          case "add":
            return a.add(c);
          case "sub":
            return a.sub(c);
          case "mul":
            return a.mul(c);
          case "div":
            return a.div(c);
          case "and":
            return a.and(c);
          case "or":
            return a.or(c);
          case "xor":
            return a.xor(c);
          case "shl":
            return a.shl(c);
          default:
            return a.shr(c);
        }
      },
      t === "u32" ? bitsBound(op, boundOf(x), op === "shr" ? boundOf(y, Math.min) : boundOf(y)) : undefined,
    );
  };
  /** An upper bound (or with `pick` = Math.min, a lower bound of constant lanes) of the unsigned lane values of `x`. */
  const boundOf = (x: L4, pick: (...xs: number[]) => number = Math.max): number | undefined => {
    if ("v" in x) return pick === Math.max ? x.max : undefined;
    const cs = "u" in x ? [x.u] : x.cs.map((c) => ({ c, t: x.t }) as C);
    return cs.every(isConst) ? pick(...cs.map((c) => (c as { c: number }).c >>> 0)) : undefined;
  };
  const load = (type: string, off: L4): L4 => {
    if ("u" in off)
      return {
        u: emitScalar(
          { op: "load", type: type as never, offset: { op: "var", name: "$off" } },
          0,
          new Map([["$off", off.u]]),
        ),
      };
    if (!("cs" in off) || (type !== "u8" && type !== "i8") || !off.cs.every((c, j) => c === (off.cs[0] as number) + j))
      throw new NotLanewise();
    const at = off.cs[0] as number;
    return type === "i8"
      ? vbind(`ld${L}i8@${at}`, "i32", () => bytes.atVec(base().add(at), VEC("i32")))
      : vbind(`ld${L}u8@${at}`, "i32", () => bytes.atVec(base().add(at), VEC("u32")).bitcast(VEC("i32")), 255);
  };
  const go = (e: DecodeExpr, i0: number, env: ReadonlyMap<string, L4>): L4 => {
    switch (e.op) {
      case "const":
        return { u: { c: e.value, t: Number.isInteger(e.value) && Math.abs(e.value) < 2 ** 31 ? "i32" : "f32" } };
      case "i":
        return { cs: Array.from({ length: L }, (_, j) => i0 + j), t: "i32" };
      case "var":
        return env.get(e.name) as L4;
      case "let":
        return go(e.body, i0, new Map([...env, [e.name, go(e.value, i0, env)]]));
      case "load":
        return load(e.type, go(e.offset, i0, env));
      case "f32": {
        const a = go(e.a, i0, env);
        if ("u" in a) return { u: emitScalar({ op: "f32", a: { op: "var", name: "$a" } }, 0, new Map([["$a", a.u]])) };
        if ("cs" in a)
          return norm(
            a.cs.map((c) => Math.fround(a.t === "u32" ? c >>> 0 : c)),
            "f32",
          );
        return { v: asVec(a, "f32"), t: "f32" };
      }
      case "select": {
        const c = go(e.cond, i0, env);
        if (!("u" in c)) throw new NotLanewise();
        if (isConst(c.u)) return c.u.c !== 0 ? go(e.a, i0, env) : go(e.b, i0, env);
        const x = go(e.a, i0, env),
          y = go(e.b, i0, env);
        if (!("u" in x) || !("u" in y)) throw new NotLanewise();
        return {
          u: emitScalar(
            {
              op: "select",
              cond: { op: "var", name: "$c" },
              a: { op: "var", name: "$x" },
              b: { op: "var", name: "$y" },
            },
            0,
            new Map([
              ["$c", c.u],
              ["$x", x.u],
              ["$y", y.u],
            ]),
          ),
        };
      }
      default: {
        const x = go(e.a, i0, env),
          y = go(e.b, i0, env);
        if ("u" in x && "u" in y) return { u: binaryScalar(e.op, x.u, y.u) };
        if (!("v" in x) && !("v" in y)) {
          const xs = "u" in x ? Array.from({ length: L }, () => x.u) : x.cs.map((c) => ({ c, t: x.t }));
          const ys = "u" in y ? Array.from({ length: L }, () => y.u) : y.cs.map((c) => ({ c, t: y.t }));
          const r = xs.map((xc, j) =>
            isConst(xc) && isConst(ys[j] as C) ? fold(e.op, xc, ys[j] as { c: number; t: Kind }) : undefined,
          );
          if (r.every((q) => q !== undefined))
            return norm(
              r.map((q) => q.c),
              r[0]!.t,
            );
        }
        return lanewise(e.op, x, y);
      }
    }
  };
  return (e, i0, lanes) => {
    L = lanes;
    return asVec(go(e, i0, new Map()), "f32");
  };
}

/** Bound of a u32 bit op's result from its operands' bounds (undefined = unknown). */
function bitsBound(op: string, a: number | undefined, b: number | undefined): number | undefined {
  const ones = (m: number): number => 2 ** Math.ceil(Math.log2(m + 1)) - 1;
  switch (op) {
    case "and":
      return a === undefined ? b : b === undefined ? a : Math.min(a, b);
    case "or":
    case "xor":
      return a === undefined || b === undefined ? undefined : ones(Math.max(a, b));
    case "shr":
      return a === undefined || b === undefined || b > 31 ? undefined : Math.floor(a / 2 ** b);
    case "shl": {
      const r = a === undefined || b === undefined || b > 31 ? undefined : a * 2 ** b;
      return r !== undefined && r < 2 ** 32 ? r : undefined;
    }
    default:
      return undefined;
  }
}

// The lane-wise form of an unrolled decode recipe (decode-unrolled.ts's element4/elementN): the recipe evaluated
// over 4, 8 or 16 consecutive elements at once, with lane-uniform subtrees kept scalar.

import type { Arr, Builder, Val } from "@poot/kernel-dsl";
import type { DecodeExpr } from "@poot/graph-ir";
import { dyn, fold, isConst, type C, type Kind, type V } from "./decode-fold.js";

/** A vector of 4, 8 or 16 lanes of a recipe type. */
export type VKind = `vec${4 | 8 | 16}<${Kind}>`;
/**
 * A recipe value over four consecutive elements: the same for every lane (`u`, a scalar C), known per lane at
 * generation time (`cs`), or an emitted vec4 (`v`, with the recipe type of its lanes).
 */
type L4 =
  | { readonly u: C }
  | { readonly cs: readonly number[]; readonly t: Kind }
  | { readonly v: Val<VKind>; readonly t: Kind; readonly max?: number };
/** Thrown inside element4 for a recipe node it does not vectorize; element4 then builds the vector lane by lane. */
export class NotLanewise extends Error {}

/**
 * Vectorizes a recipe across elements i0 … i0 + lanes - 1 (i0 a multiple of lanes): subtrees equal in every lane stay scalar (the
 * scalar decoder's `emit`, memoized per block), lane-varying integer constants fold per lane, a u8/i8 load at four
 * consecutive offsets becomes one `load4`, and the ops of the recipe apply lane-wise with its typing rules (bit ops
 * on u32, float if either side is f32, else i32). Anything else (a lane-varying select, idiv, min, a gather) throws
 * NotLanewise. Each lane computes exactly the scalar decoder's value for its element.
 */
export function vectorizer(
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

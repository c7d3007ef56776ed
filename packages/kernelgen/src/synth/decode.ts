// Compiles a packed format's decode recipe (graph-ir `PackedFormat.decode`, an expression tree over a block's
// bytes) into kernel IR: loads become byte reads of u32 words, and subtrees independent of `i` are hoisted per block.

import type { Arr, Builder, Val } from "@poot/kernel-dsl";
import type { DecodeExpr, PackedFormat } from "@poot/graph-ir";
import { KernelgenError } from "../errors.js";

type Kind = "i32" | "u32" | "f32";
type V = Val<Kind>;

/** Byte `off` (0..255 as u32) of little-endian u32 words. */
export function byteOf(words: Arr<"u32">, off: Val<"u32">): Val<"u32"> {
  return words.at(off.shr(2)).shr(off.and(3).mul(8)).and(0xff);
}

/** A decoder for one format: `block(base)` hoists per-block values, then `element(i)` decodes element i (f32). */
export interface BlockDecoder {
  /** Emits the per-block (i-independent) part for the block starting at byte `base`; call before `element`. */
  block(base: Val<"u32">): void;
  /** Emits the decode of element `i` (u32) of the current block. */
  element(i: Val<"u32">): Val<"f32">;
  /** @internal One recipe op on IR values with the recipe's typing rules (shared with the unrolled decoder). */
  binary(op: string, a: V, b: V): V;
}

/** Checks that a recipe only uses what the compiler supports; throws `bad_format` otherwise. */
export function checkFormat(synth: string, f: PackedFormat): void {
  if (!Number.isInteger(f.blockSize) || f.blockSize < 1 || !Number.isInteger(f.bytesPerBlock) || f.bytesPerBlock < 1) {
    throw new KernelgenError(
      "bad_format",
      `format ${f.name}: blockSize ${f.blockSize}, bytesPerBlock ${f.bytesPerBlock}`,
      { synth, param: "format", value: f.name },
    );
  }
  const walk = (e: DecodeExpr, scope: ReadonlySet<string>): void => {
    switch (e.op) {
      case "const":
        if (!Number.isFinite(e.value))
          throw new KernelgenError("bad_format", `format ${f.name}: non-finite const`, { synth, param: "format" });
        return;
      case "i":
        return;
      case "load":
        walk(e.offset, scope);
        return;
      case "select":
        walk(e.cond, scope);
        walk(e.a, scope);
        walk(e.b, scope);
        return;
      case "f32":
        walk(e.a, scope);
        return;
      case "let":
        walk(e.value, scope);
        walk(e.body, new Set([...scope, e.name]));
        return;
      case "var":
        if (!scope.has(e.name))
          throw new KernelgenError("bad_format", `format ${f.name}: unbound variable ${e.name}`, {
            synth,
            param: "format",
          });
        return;
      default:
        walk(e.a, scope);
        walk(e.b, scope);
    }
  };
  walk(f.decode, new Set());
}

/**
 * Builds a decoder of `f` reading `words`. Integer subtrees compute in i32 (bit operators on the u32 pattern, u32
 * loads stay u32), `div` and float loads in f32, and floor semantics for idiv/mod as in the reference decoder.
 */
export function blockDecoder(b: Builder, f: PackedFormat, words: Arr<"u32">): BlockDecoder {
  const { let_, u32, i32, f32, select, floor, min, max, unpack } = b;
  // Which nodes depend on i (through `var`s too), so the rest can be hoisted out of the element loop.
  const dep = new Map<DecodeExpr, boolean>();
  const depOf = (e: DecodeExpr, env: ReadonlyMap<string, boolean>): boolean => {
    let d: boolean;
    switch (e.op) {
      case "const":
        d = false;
        break;
      case "i":
        d = true;
        break;
      case "load":
        d = depOf(e.offset, env);
        break;
      case "select":
        d = [depOf(e.cond, env), depOf(e.a, env), depOf(e.b, env)].some((x) => x);
        break;
      case "f32":
        d = depOf(e.a, env);
        break;
      case "let": {
        const v = depOf(e.value, env);
        d = depOf(e.body, new Map([...env, [e.name, v]]));
        break;
      }
      case "var":
        d = env.get(e.name) ?? true;
        break;
      default:
        d = [depOf(e.a, env), depOf(e.b, env)].some((x) => x);
    }
    dep.set(e, d);
    return d;
  };
  depOf(f.decode, new Map());

  const toF32 = (v: V): Val<"f32"> => (v.type === "f32" ? (v as Val<"f32">) : v.cast("f32"));
  const toI32 = (v: V): Val<"i32"> =>
    v.type === "i32"
      ? (v as Val<"i32">)
      : v.type === "u32"
        ? (v as Val<"u32">).bitcast("i32")
        : (v as Val<"f32">).cast("i32");
  const toU32 = (v: V): Val<"u32"> =>
    v.type === "u32"
      ? (v as Val<"u32">)
      : v.type === "i32"
        ? (v as Val<"i32">).bitcast("u32")
        : (v as Val<"f32">).cast("u32");
  const nonzero = (v: V): Val<"bool"> =>
    (v as Val<"f32">).ne(v.type === "f32" ? f32(0) : ((v.type === "i32" ? i32(0) : u32(0)) as unknown as Val<"f32">));

  let base: Val<"u32"> = u32(0);
  let idx: Val<"u32"> = u32(0);
  const hoisted = new Map<DecodeExpr, V>();
  const load = (type: string, off: Val<"u32">): V => {
    const at = let_(base.add(off), "boff");
    const u16 = () => byteOf(words, at).or(byteOf(words, at.add(1)).shl(8));
    const u32v = () =>
      byteOf(words, at)
        .or(byteOf(words, at.add(1)).shl(8))
        .or(byteOf(words, at.add(2)).shl(16))
        .or(byteOf(words, at.add(3)).shl(24));
    switch (type) {
      case "u8":
        return byteOf(words, at).bitcast("i32");
      case "i8":
        return byteOf(words, at).shl(24).bitcast("i32").shr(24);
      case "u16":
        return u16().bitcast("i32");
      case "i16":
        return u16().shl(16).bitcast("i32").shr(16);
      case "u32":
        return u32v();
      case "f16":
        return unpack("f16", u16());
      case "bf16":
        return unpack("bf16", u16());
      case "f32":
        return u32v().bitcast("f32");
      default:
        throw new KernelgenError("bad_format", `format ${f.name}: unknown load type ${type}`, {
          synth: "decode",
          param: "format",
        });
    }
  };
  const emit = (e: DecodeExpr, env: ReadonlyMap<string, V>, hoisting: boolean): V => {
    const h = hoisted.get(e);
    if (h !== undefined) return h;
    let v: V;
    switch (e.op) {
      case "const":
        return Number.isInteger(e.value) && Math.abs(e.value) < 2 ** 31 ? i32(e.value) : f32(e.value);
      case "i":
        return idx.bitcast("i32");
      case "load":
        v = load(e.type, toU32(emit(e.offset, env, hoisting)));
        break;
      case "f32":
        v = toF32(emit(e.a, env, hoisting));
        break;
      case "var":
        return env.get(e.name) as V;
      case "let": {
        const value = emit(e.value, env, hoisting);
        return emit(e.body, new Map([...env, [e.name, value]]), hoisting);
      }
      case "select": {
        const c = nonzero(emit(e.cond, env, hoisting));
        const a = emit(e.a, env, hoisting),
          bb = emit(e.b, env, hoisting);
        v = a.type === bb.type ? select(c, a as Val<"f32">, bb as Val<"f32">) : select(c, toF32(a), toF32(bb));
        break;
      }
      default: {
        const a = emit(e.a, env, hoisting),
          bb = emit(e.b, env, hoisting);
        v = binary(e.op, a, bb);
      }
    }
    const bound = let_(v, "dq") as V;
    if (hoisting) hoisted.set(e, bound);
    return bound;
  };
  const binary = (op: string, a: V, bb: V): V => {
    if (op === "shl" || op === "shr" || op === "and" || op === "or" || op === "xor") {
      const x = toU32(a),
        y = toU32(bb);
      return op === "shl"
        ? x.shl(y)
        : op === "shr"
          ? x.shr(y)
          : op === "and"
            ? x.and(y)
            : op === "or"
              ? x.or(y)
              : x.xor(y);
    }
    const isFloat = op === "div" || a.type === "f32" || bb.type === "f32";
    if (isFloat) {
      const x = toF32(a),
        y = toF32(bb);
      switch (op) {
        case "add":
          return x.add(y);
        case "sub":
          return x.sub(y);
        case "mul":
          return x.mul(y);
        case "div":
          return x.div(y);
        case "idiv":
          return floor(x.div(y));
        case "mod":
          return x.sub(floor(x.div(y)).mul(y));
        case "lt":
          return select(x.lt(y), i32(1), 0);
        case "min":
          return min(x, y);
        case "max":
          return max(x, y);
        default:
          throw new KernelgenError("bad_format", `format ${f.name}: unknown op ${op}`, {
            synth: "decode",
            param: "format",
          });
      }
    }
    const x = toI32(a),
      y = toI32(bb);
    switch (op) {
      case "add":
        return x.add(y);
      case "sub":
        return x.sub(y);
      case "mul":
        return x.mul(y);
      case "idiv":
      case "mod": {
        // Floor division / modulo (the reference uses Math.floor): adjust truncation when the signs differ.
        const q = let_(x.div(y), "q"),
          r = let_(x.rem(y), "r");
        const adjust = r.ne(0).and(r.lt(0).ne(y.lt(0)));
        return op === "idiv" ? select(adjust, q.sub(1), q) : select(adjust, r.add(y), r);
      }
      case "lt":
        return select(x.lt(y), i32(1), 0);
      case "min":
        return min(x, y);
      case "max":
        return max(x, y);
      default:
        throw new KernelgenError("bad_format", `format ${f.name}: unknown op ${op}`, {
          synth: "decode",
          param: "format",
        });
    }
  };
  // Per-block pass: emit every maximal i-independent subtree that does real work (a load or arithmetic).
  const hoistWalk = (e: DecodeExpr, env: Map<string, V>): void => {
    if (dep.get(e) === false) {
      if (e.op !== "const" && e.op !== "var") emit(e, env, true);
      return;
    }
    switch (e.op) {
      case "load":
        hoistWalk(e.offset, env);
        return;
      case "select":
        hoistWalk(e.cond, env);
        hoistWalk(e.a, env);
        hoistWalk(e.b, env);
        return;
      case "f32":
        hoistWalk(e.a, env);
        return;
      case "let": {
        hoistWalk(e.value, env);
        const hv = hoisted.get(e.value);
        const inner = new Map(env);
        if (hv !== undefined) inner.set(e.name, hv);
        hoistWalk(e.body, inner);
        return;
      }
      case "i":
      case "var":
      case "const":
        return;
      default:
        hoistWalk(e.a, env);
        hoistWalk(e.b, env);
    }
  };
  return {
    block(b0) {
      base = b0;
      hoisted.clear();
      hoistWalk(f.decode, new Map());
    },
    element(i) {
      idx = i;
      return toF32(emit(f.decode, new Map(), false));
    },
    binary,
  };
}

// A packed format's decode recipe compiled for a known element index (CPU kernels unroll the block): everything that
// depends only on i and constants folds at generation time, byte loads read a u8 buffer at constant offsets, and
// equal subtrees (a sub-block's scale) are emitted once per block.

import type { Arr, Builder, Val } from "@poot/kernel-dsl";
import type { DecodeExpr, PackedFormat } from "@poot/graph-ir";
import { KernelgenError } from "../errors.js";
import { dyn, f, fold, isConst, type C, type V } from "./decode-fold.js";
import { NotLanewise, vectorizer } from "./decode-lanes.js";

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

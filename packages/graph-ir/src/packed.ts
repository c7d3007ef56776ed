// Packed weight formats as data: block size, bytes per block and a decode recipe (an expression tree),
// plus the reference interpreter `decodeBlock` that kernel synthesizers and the evaluator agree on.

import { bf16BitsToF32, f16BitsToF32 } from "./convert.js";
import { GraphError } from "./errors.js";

/** Little-endian load types available to a decode recipe. */
export type DecodeLoadType = "u8" | "i8" | "u16" | "i16" | "u32" | "f16" | "bf16" | "f32";

/** Binary operators of a decode recipe; shl/shr/and/or/xor/idiv/mod act on integer operands (u32 for bit ops). */
export type DecodeBinaryOp =
  | "add"
  | "sub"
  | "mul"
  | "div"
  | "idiv"
  | "mod"
  | "shl"
  | "shr"
  | "and"
  | "or"
  | "xor"
  | "lt"
  | "min"
  | "max";

/**
 * A node of a decode recipe giving element `i` of a block from the block's bytes.
 * `load.offset` is a byte offset relative to the block start; `let`/`var` name shared subexpressions.
 */
export type DecodeExpr =
  | { readonly op: "const"; readonly value: number }
  | { readonly op: "i" }
  | { readonly op: "load"; readonly type: DecodeLoadType; readonly offset: DecodeExpr }
  | { readonly op: DecodeBinaryOp; readonly a: DecodeExpr; readonly b: DecodeExpr }
  | { readonly op: "select"; readonly cond: DecodeExpr; readonly a: DecodeExpr; readonly b: DecodeExpr }
  | { readonly op: "f32"; readonly a: DecodeExpr }
  | { readonly op: "let"; readonly name: string; readonly value: DecodeExpr; readonly body: DecodeExpr }
  | { readonly op: "var"; readonly name: string };

/** A block-quantized storage format, entirely data. Rows are blocked along the last axis. */
export interface PackedFormat {
  /** Format name, e.g. `q8_0`; unique within a graph. */
  readonly name: string;
  /** Elements per block. */
  readonly blockSize: number;
  /** Bytes per block. */
  readonly bytesPerBlock: number;
  /** Element `i` (0 <= i < blockSize) of a block; the result is rounded to f32. */
  readonly decode: DecodeExpr;
}

const LOAD_BYTES: Record<DecodeLoadType, number> = { u8: 1, i8: 1, u16: 2, i16: 2, u32: 4, f16: 2, bf16: 2, f32: 4 };

type Compiled = (i: number, view: DataView, base: number, env: Float64Array) => number;

// Each `let` node gets its own slot in a per-format Float64Array (resolved at compile time, no name lookups).
type Scope = ReadonlyMap<string, number>;
interface Slots {
  count: number;
}

function fail(format: string, message: string): never {
  throw new GraphError("packed-format", message, { key: format });
}

function compile(f: PackedFormat, e: DecodeExpr, scope: Scope, slots: Slots): Compiled {
  switch (e.op) {
    case "const": {
      const v = e.value;
      if (typeof v !== "number" || !Number.isFinite(v)) fail(f.name, `const node needs a finite number`);
      return () => v;
    }
    case "i":
      return (i) => i;
    case "load": {
      const off = compile(f, e.offset, scope, slots);
      const size = LOAD_BYTES[e.type];
      if (size === undefined) fail(f.name, `unknown load type ${String(e.type)}`);
      const limit = f.bytesPerBlock - size;
      const name = f.name;
      const read = loader(e.type);
      return (i, view, base, env) => {
        const o = off(i, view, base, env);
        // Loads outside the block are a malformed recipe, not a short read.
        if (!Number.isInteger(o) || o < 0 || o > limit)
          fail(name, `load ${e.type} at byte ${o} is outside the ${f.bytesPerBlock}-byte block (element ${i})`);
        return read(view, base + o);
      };
    }
    case "select": {
      const c = compile(f, e.cond, scope, slots),
        a = compile(f, e.a, scope, slots),
        b = compile(f, e.b, scope, slots);
      return (i, v, base, env) => (c(i, v, base, env) !== 0 ? a(i, v, base, env) : b(i, v, base, env));
    }
    case "f32": {
      const a = compile(f, e.a, scope, slots);
      return (i, v, base, env) => Math.fround(a(i, v, base, env));
    }
    case "let": {
      const value = compile(f, e.value, scope, slots);
      const slot = slots.count++;
      const body = compile(f, e.body, new Map([...scope, [e.name, slot]]), slots);
      return (i, v, base, env) => {
        env[slot] = value(i, v, base, env);
        return body(i, v, base, env);
      };
    }
    case "var": {
      const slot = scope.get(e.name);
      if (slot === undefined) return fail(f.name, `variable "${e.name}" is not bound by an enclosing let`);
      return (_i, _v, _b, env) => env[slot]!;
    }
    default:
      return compileBinary(f, e, scope, slots);
  }
}

function loader(t: DecodeLoadType): (v: DataView, o: number) => number {
  switch (t) {
    case "u8":
      return (v, o) => v.getUint8(o);
    case "i8":
      return (v, o) => v.getInt8(o);
    case "u16":
      return (v, o) => v.getUint16(o, true);
    case "i16":
      return (v, o) => v.getInt16(o, true);
    case "u32":
      return (v, o) => v.getUint32(o, true);
    case "f16":
      return (v, o) => f16BitsToF32(v.getUint16(o, true));
    case "bf16":
      return (v, o) => bf16BitsToF32(v.getUint16(o, true));
    case "f32":
      return (v, o) => v.getFloat32(o, true);
    default:
      return t satisfies never;
  }
}

function compileBinary(
  f: PackedFormat,
  e: Extract<DecodeExpr, { a: DecodeExpr; b: DecodeExpr }>,
  scope: Scope,
  slots: Slots,
): Compiled {
  if (e.op === "select") return fail(f.name, "unreachable");
  const a = compile(f, e.a, scope, slots),
    b = compile(f, e.b, scope, slots);
  const op = binaryFn(f.name, e.op);
  return (i, v, base, env) => op(a(i, v, base, env), b(i, v, base, env));
}

function binaryFn(name: string, op: DecodeBinaryOp): (x: number, y: number) => number {
  switch (op) {
    case "add":
      return (x, y) => x + y;
    case "sub":
      return (x, y) => x - y;
    case "mul":
      return (x, y) => x * y;
    case "div":
      return (x, y) => x / y;
    case "idiv":
      return (x, y) => Math.floor(x / y);
    case "mod":
      return (x, y) => x - Math.floor(x / y) * y;
    // Bit operators work on the unsigned 32-bit pattern of integer operands.
    case "shl":
      return (x, y) => (x << y) >>> 0;
    case "shr":
      return (x, y) => (x >>> 0) >>> y;
    case "and":
      return (x, y) => (x & y) >>> 0;
    case "or":
      return (x, y) => (x | y) >>> 0;
    case "xor":
      return (x, y) => (x ^ y) >>> 0;
    case "lt":
      return (x, y) => (x < y ? 1 : 0);
    case "min":
      return (x, y) => Math.min(x, y);
    case "max":
      return (x, y) => Math.max(x, y);
    default:
      return fail(name, `unknown decode op ${String(op satisfies never)}`);
  }
}

interface CompiledFormat {
  readonly fn: Compiled;
  readonly slots: number;
}

const cache = new WeakMap<PackedFormat, CompiledFormat>();

/** Checks a format descriptor (sizes and recipe shape) and throws `packed-format` if malformed. */
export function validatePackedFormat(f: PackedFormat): void {
  if (typeof f.name !== "string" || f.name.length === 0) fail(String(f.name), "format needs a name");
  if (!Number.isInteger(f.blockSize) || f.blockSize < 1)
    fail(f.name, `blockSize ${f.blockSize} must be a positive integer`);
  if (!Number.isInteger(f.bytesPerBlock) || f.bytesPerBlock < 1)
    fail(f.name, `bytesPerBlock ${f.bytesPerBlock} must be a positive integer`);
  compiled(f);
}

function compiled(f: PackedFormat): CompiledFormat {
  let c = cache.get(f);
  if (c === undefined) {
    const slots: Slots = { count: 0 };
    const fn = compile(f, f.decode, new Map(), slots);
    c = { fn, slots: slots.count };
    cache.set(f, c);
  }
  return c;
}

/**
 * Decodes one block starting at `bytes[byteOffset]` into `out[outOffset .. outOffset + blockSize)`,
 * each element rounded to f32.
 */
export function decodeBlock(
  f: PackedFormat,
  bytes: Uint8Array,
  byteOffset: number,
  out: Float64Array | Float32Array,
  outOffset: number,
): void {
  if (byteOffset < 0 || byteOffset + f.bytesPerBlock > bytes.length) {
    fail(f.name, `block at byte ${byteOffset} overruns the ${bytes.length}-byte buffer`);
  }
  const { fn, slots } = compiled(f);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const env = new Float64Array(slots);
  for (let i = 0; i < f.blockSize; i++) out[outOffset + i] = Math.fround(fn(i, view, byteOffset, env));
}

/** Decodes a whole packed buffer of `numel` elements (numel a multiple of blockSize) to f32 values. */
export function decodePacked(f: PackedFormat, bytes: Uint8Array, numel: number): Float64Array {
  const out = new Float64Array(numel);
  const blocks = numel / f.blockSize;
  if (blocks * f.bytesPerBlock > bytes.length) fail(f.name, `${blocks} blocks overrun the ${bytes.length}-byte buffer`);
  // One view and one slot array for the whole buffer: this loop is the evaluator's packed-weight hot path.
  const { fn, slots } = compiled(f);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const env = new Float64Array(slots);
  for (let b = 0, o = 0; b < blocks; b++) {
    const base = b * f.bytesPerBlock;
    for (let i = 0; i < f.blockSize; i++, o++) out[o] = Math.fround(fn(i, view, base, env));
  }
  return out;
}

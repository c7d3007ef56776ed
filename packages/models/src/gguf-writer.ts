// GGUF v3 header encoder: metadata, tensor directory and padding; tensor data is appended by the caller.
// Used to write test files and the 1B-shaped benchmark checkpoint without holding its data in memory.
import { invariant } from "./errors.js";
import type { QuantFormat } from "./quant/format.js";

/** A typed metadata entry to write (the type decides the encoding; arrays name their element type). */
export type GGUFWriteValue =
  | {
      readonly type: "u8" | "i8" | "u16" | "i16" | "u32" | "i32" | "f32" | "u64" | "i64" | "f64";
      readonly value: number | bigint;
    }
  | { readonly type: "bool"; readonly value: boolean }
  | { readonly type: "string"; readonly value: string }
  | {
      readonly type: "array";
      readonly elem: "u8" | "i8" | "u16" | "i16" | "u32" | "i32" | "f32" | "string" | "bool" | "u64" | "i64" | "f64";
      readonly value: readonly (number | bigint | string | boolean)[];
    };

/** A tensor to declare: ggml dims (fastest first) and format; data follows in declaration order. */
export interface GGUFWriteTensor {
  readonly name: string;
  readonly ggmlDims: readonly number[];
  readonly format: QuantFormat;
}

const TYPE_ID = {
  u8: 0,
  i8: 1,
  u16: 2,
  i16: 3,
  u32: 4,
  i32: 5,
  f32: 6,
  bool: 7,
  string: 8,
  array: 9,
  u64: 10,
  i64: 11,
  f64: 12,
} as const;

class Sink {
  private chunks: Uint8Array[] = [];
  length = 0;
  private push(b: Uint8Array): void {
    this.chunks.push(b);
    this.length += b.byteLength;
  }
  scalar(kind: keyof typeof TYPE_ID, v: number | bigint | boolean | string): void {
    if (kind === "string") return this.str(v as string);
    const size = { u8: 1, i8: 1, bool: 1, u16: 2, i16: 2, u32: 4, i32: 4, f32: 4, u64: 8, i64: 8, f64: 8, array: 0 }[
      kind
    ];
    const b = new Uint8Array(size);
    const dv = new DataView(b.buffer);
    switch (kind) {
      case "u8":
        dv.setUint8(0, Number(v));
        break;
      case "i8":
        dv.setInt8(0, Number(v));
        break;
      case "bool":
        dv.setUint8(0, v ? 1 : 0);
        break;
      case "u16":
        dv.setUint16(0, Number(v), true);
        break;
      case "i16":
        dv.setInt16(0, Number(v), true);
        break;
      case "u32":
        dv.setUint32(0, Number(v), true);
        break;
      case "i32":
        dv.setInt32(0, Number(v), true);
        break;
      case "f32":
        dv.setFloat32(0, Number(v), true);
        break;
      case "u64":
        dv.setBigUint64(0, BigInt(v as number | bigint), true);
        break;
      case "i64":
        dv.setBigInt64(0, BigInt(v as number | bigint), true);
        break;
      case "f64":
        dv.setFloat64(0, Number(v), true);
        break;
      case "array":
        invariant(false, "array is not a scalar");
        break;
      default:
        kind satisfies never;
    }
    this.push(b);
  }
  str(s: string): void {
    const b = new TextEncoder().encode(s);
    this.scalar("u64", BigInt(b.byteLength));
    this.push(b);
  }
  bytes(): Uint8Array {
    const out = new Uint8Array(this.length);
    let o = 0;
    for (const c of this.chunks) {
      out.set(c, o);
      o += c.byteLength;
    }
    return out;
  }
}

/** Encoded header plus where each tensor's data goes (relative to the data section). */
export interface EncodedGGUFHeader {
  /** Header bytes including padding up to the data section. */
  readonly header: Uint8Array;
  /** Per tensor: relative offset and byte length, in declaration order. */
  readonly placements: readonly { readonly name: string; readonly offset: number; readonly byteLength: number }[];
  /** Total data section length (including padding between tensors). */
  readonly dataLength: number;
}

/** Encodes a GGUF v3 header; tensor data must then be written at `header.length + placement.offset`. */
export function encodeGGUFHeader(
  metadata: Readonly<Record<string, GGUFWriteValue>>,
  tensors: readonly GGUFWriteTensor[],
  alignment = 32,
): EncodedGGUFHeader {
  const s = new Sink();
  s.scalar("u32", 0x46554747);
  s.scalar("u32", 3);
  s.scalar("u64", BigInt(tensors.length));
  s.scalar("u64", BigInt(Object.keys(metadata).length));
  for (const [key, v] of Object.entries(metadata)) {
    s.str(key);
    s.scalar("u32", TYPE_ID[v.type]);
    if (v.type === "array") {
      s.scalar("u32", TYPE_ID[v.elem]);
      s.scalar("u64", BigInt(v.value.length));
      for (const e of v.value) s.scalar(v.elem, e);
    } else s.scalar(v.type, v.value);
  }
  const placements: { name: string; offset: number; byteLength: number }[] = [];
  let offset = 0;
  for (const t of tensors) {
    const n = t.ggmlDims.reduce((a, b) => a * b, 1);
    invariant((t.ggmlDims[0] ?? 1) % t.format.blockElems === 0, `row of ${t.name} is not a whole number of blocks`);
    const byteLength = (n / t.format.blockElems) * t.format.blockBytes;
    s.str(t.name);
    s.scalar("u32", t.ggmlDims.length);
    for (const d of t.ggmlDims) s.scalar("u64", BigInt(d));
    s.scalar("u32", t.format.ggmlType);
    s.scalar("u64", BigInt(offset));
    placements.push({ name: t.name, offset, byteLength });
    offset = Math.ceil((offset + byteLength) / alignment) * alignment;
  }
  const pad = (alignment - (s.length % alignment)) % alignment;
  if (pad > 0) for (let i = 0; i < pad; i++) s.scalar("u8", 0);
  return { header: s.bytes(), placements, dataLength: offset };
}

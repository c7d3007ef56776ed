// Host data <-> the bytes a device buffer holds for a graph dtype: f32 and integers as themselves, f16/bf16
// as their bits, bool as one byte, packed weights as their raw bytes (kernels read them as u32 words).

import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits, isPacked, storageBytes, type DType, type HostData, type ScalarDType } from "@poot/graph-ir";
import type { OutputData } from "@poot/executor";

/** Bytes of `n` elements of `dtype` as stored on the device. */
export function deviceBytesOf(dtype: DType, n: number): number {
  return storageBytes(dtype, n);
}

/** Encodes `n` elements of host data as device bytes (f16/bf16 given as bits in a Uint16Array pass through). */
export function encodeHost(dtype: DType, n: number, host: HostData): Uint8Array {
  if (isPacked(dtype)) return Uint8Array.from(host as ArrayLike<number>);
  const d: ScalarDType = dtype;
  switch (d) {
    case "f32": return bytes(Float32Array.from(host as ArrayLike<number>));
    case "f16": return bytes(host instanceof Uint16Array ? host : Uint16Array.from(host as ArrayLike<number>, (x) => f32ToF16Bits(x)));
    case "bf16": return bytes(host instanceof Uint16Array ? host : Uint16Array.from(host as ArrayLike<number>, (x) => f32ToBf16Bits(x)));
    case "i32": return bytes(Int32Array.from(host as ArrayLike<number>));
    case "u32": return bytes(Uint32Array.from(host as ArrayLike<number>));
    case "u8": return Uint8Array.from(host as ArrayLike<number>);
    case "bool": return Uint8Array.from(host as ArrayLike<number>, (x) => (x !== 0 ? 1 : 0));
    default:
      void n;
      return d satisfies never;
  }
}

/** Decodes device bytes of a scalar dtype as an OutputData (f16/bf16 widened to f32), into `into` when it fits. */
export function decodeDevice(dtype: ScalarDType, raw: Uint8Array, n: number, into?: OutputData): OutputData {
  const aligned = raw.byteOffset % 4 === 0 ? raw : raw.slice();
  switch (dtype) {
    case "f32": return fill(into, Float32Array, new Float32Array(aligned.buffer, aligned.byteOffset, n));
    case "i32": return fill(into, Int32Array, new Int32Array(aligned.buffer, aligned.byteOffset, n));
    case "u32": return fill(into, Uint32Array, new Uint32Array(aligned.buffer, aligned.byteOffset, n));
    case "u8":
    case "bool": return fill(into, Uint8Array, aligned.subarray(0, n));
    case "f16":
    case "bf16": {
      const bits = new Uint16Array(aligned.buffer, aligned.byteOffset, n);
      const widen = dtype === "f16" ? f16BitsToF32 : bf16BitsToF32;
      const out = into instanceof Float32Array && into.length >= n ? into : new Float32Array(n);
      for (let i = 0; i < n; i++) out[i] = widen(bits[i]!);
      return out;
    }
    default:
      return dtype satisfies never;
  }
}

function bytes(a: ArrayBufferView): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

function fill<T extends OutputData>(into: OutputData | undefined, Ctor: { new (n: number): T }, src: T): T {
  const out = into instanceof Ctor && into.length >= src.length ? (into as T) : new Ctor(src.length);
  out.set(src as never);
  return out;
}

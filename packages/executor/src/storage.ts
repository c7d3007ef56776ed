// Host data to device bytes and back, shared by every device: f32 as is, f16/bf16 as bits (rounded from
// numbers when given numbers), integers and bools as their storage arrays, packed weights as raw bytes.

import { isPacked, type DType, type HostData, type ScalarDType } from "@poot/graph-ir";
import type { OutputData } from "./contract.js";
import { allocHostBuffer, loadHost, storeHost, type HostBuffer } from "./host-state.js";

/** The storage bytes of `n` elements of `dtype` from host data (16-bit data given as Uint16Array is taken as bits). */
export function storageOf(dtype: DType, n: number, data: HostData): ArrayBufferView {
  if (isPacked(dtype)) return data instanceof Uint8Array ? data : Uint8Array.from(data);
  const d = dtype as ScalarDType;
  if ((d === "bf16" || d === "f16") && data instanceof Uint16Array) return data;
  const out = allocHostBuffer(d, n);
  storeHost(d, out, data);
  return out;
}

/** A typed view of device bytes in the storage array of `dtype` (copied first when misaligned for it). */
export function viewOf(dtype: ScalarDType, bytes: Uint8Array, n: number): HostBuffer {
  const like = allocHostBuffer(dtype, 0);
  const Ctor = like.constructor as (new (
    b: ArrayBufferLike,
    o: number,
    n: number,
  ) => HostBuffer) & { BYTES_PER_ELEMENT: number };
  const src = bytes.byteOffset % Ctor.BYTES_PER_ELEMENT === 0 ? bytes : bytes.slice();
  return new Ctor(src.buffer, src.byteOffset, n);
}

/** Device bytes of `n` elements of `dtype` as OutputData (f16/bf16 widened to f32). */
export function outputOf(dtype: ScalarDType, bytes: Uint8Array, n: number, into?: OutputData): OutputData {
  return loadHost(dtype, viewOf(dtype, bytes, n), into);
}

/** The bytes of a typed array, as a Uint8Array over the same memory. */
export function bytesOf(a: ArrayBufferView): Uint8Array {
  return a instanceof Uint8Array ? a : new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

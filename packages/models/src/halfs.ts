// Exact widening of 16-bit float storage types (IEEE binary16 and bfloat16) to f32.
// Both are storage types only (DESIGN numerics); widening is exact, so a lookup table is safe.

let f16Table: Float32Array | undefined;

/** Decodes IEEE binary16 bits to a number (exact; subnormals, infinities and NaN included). */
export function f16ToF32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const man = bits & 0x3ff;
  if (exp === 0) return sign * man * 2 ** -24;
  if (exp === 31) return man !== 0 ? NaN : sign * Infinity;
  return sign * (1 + man / 1024) * 2 ** (exp - 15);
}

/** Decodes bfloat16 bits to a number (exact: bf16 is the top half of an f32). */
export function bf16ToF32(bits: number): number {
  scratchU32[0] = (bits & 0xffff) << 16;
  return scratchF32[0]!;
}

const scratchU32 = new Uint32Array(1);
const scratchF32 = new Float32Array(scratchU32.buffer);

/** Returns a 65536-entry table mapping binary16 bits to f32 (built once, 256 KiB). */
export function f16Lut(): Float32Array {
  if (f16Table === undefined) {
    f16Table = new Float32Array(65536);
    for (let i = 0; i < 65536; i++) f16Table[i] = f16ToF32(i);
  }
  return f16Table;
}

/** Widens little-endian binary16 bytes to a new Float32Array. */
export function widenF16(bytes: Uint8Array): Float32Array {
  const n = bytes.byteLength >>> 1;
  const out = new Float32Array(n);
  const lut = f16Lut();
  for (let i = 0; i < n; i++) out[i] = lut[bytes[2 * i]! | (bytes[2 * i + 1]! << 8)]!;
  return out;
}

/** Widens little-endian bfloat16 bytes to a new Float32Array. */
export function widenBF16(bytes: Uint8Array): Float32Array {
  const n = bytes.byteLength >>> 1;
  const out = new Float32Array(n);
  const u32 = new Uint32Array(out.buffer);
  for (let i = 0; i < n; i++) u32[i] = (bytes[2 * i]! | (bytes[2 * i + 1]! << 8)) << 16;
  return out;
}

/** Copies little-endian f32 bytes into a new Float32Array (no alignment assumption on the input). */
export function copyF32(bytes: Uint8Array): Float32Array {
  const out = new Float32Array(bytes.byteLength >>> 2);
  new Uint8Array(out.buffer).set(bytes.subarray(0, out.byteLength));
  return out;
}

/** The values of little-endian F32 / BF16 / F16 bytes (scale tensors), widened to f32. */
export function widenFloats(dtype: string, bytes: Uint8Array): Float32Array {
  return dtype === "F32" ? copyF32(bytes) : dtype === "BF16" ? widenBF16(bytes) : widenF16(bytes);
}

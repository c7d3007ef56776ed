// Exact f32 <-> f16 / bf16 conversion on bit patterns (round-to-nearest-even, NaN, ±Inf, subnormals).
// Widening is exact; narrowing rounds an f32 value once, as a device storing from f32 registers does.

const f32Buf = new Float32Array(1);
const u32Buf = new Uint32Array(f32Buf.buffer);

/** The IEEE-754 binary32 bit pattern of `x` (after rounding `x` to f32). */
export function f32ToBits(x: number): number {
  f32Buf[0] = x;
  return u32Buf[0]!;
}

/** The f32 value of a binary32 bit pattern. */
export function bitsToF32(bits: number): number {
  u32Buf[0] = bits >>> 0;
  return f32Buf[0]!;
}

/** Widens bf16 bits to the exact f32 (as a JS number). */
export function bf16BitsToF32(bits: number): number {
  return bitsToF32((bits & 0xffff) << 16);
}

/** Rounds `x` to f32, then to bf16 with round-to-nearest-even; NaN stays a (quiet) NaN with its sign. */
export function f32ToBf16Bits(x: number): number {
  const b = f32ToBits(x);
  // NaN: keep sign and the top payload bits, force the quiet bit so truncation cannot make it Inf.
  if ((b & 0x7f800000) === 0x7f800000 && (b & 0x7fffff) !== 0) return ((b >>> 16) | 0x40) & 0xffff;
  // Adding 0x7fff plus the lsb of the kept half rounds to nearest, ties to even; carries reach Inf correctly.
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}

/** Widens f16 bits to the exact f32 (as a JS number). */
export function f16BitsToF32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const mant = bits & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant === 0 ? sign * Infinity : NaN;
  return sign * (1024 + mant) * 2 ** (exp - 25);
}

/** Rounds `x` to f32, then to f16 with round-to-nearest-even (overflow -> ±Inf, gradual underflow). */
export function f32ToF16Bits(x: number): number {
  const b = f32ToBits(x);
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  const mant = b & 0x7fffff;
  if (exp === 255) return sign | 0x7c00 | (mant !== 0 ? 0x200 | (mant >>> 13) : 0);
  const e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    // Below half the smallest subnormal (2^-25) everything rounds to zero.
    if (e < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rem = m & ((1 << shift) - 1);
    let r = m >>> shift;
    if (rem > half || (rem === half && (r & 1) !== 0)) r++;
    // r === 0x400 is the smallest normal, which is also its correct encoding.
    return sign | r;
  }
  let r = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  // A carry out of the mantissa bumps the exponent, and from 30 to 31 that is exactly ±Inf.
  if (rem > 0x1000 || (rem === 0x1000 && (r & 1) !== 0)) r++;
  return sign | r;
}

/** Rounds a float64 to what an f16 store holds (via f32), returned as a number. */
export function roundToF16(x: number): number {
  return f16BitsToF32(f32ToF16Bits(x));
}

/** Rounds a float64 to what a bf16 store holds (via f32), returned as a number. */
export function roundToBf16(x: number): number {
  return bf16BitsToF32(f32ToBf16Bits(x));
}

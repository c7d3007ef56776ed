// Bit-exact scalar helpers shared by the interpreter and hosts: f32 <-> bf16/f16 bits (round-to-nearest-even),
// f32 <-> u32 bit casts, saturating float -> int conversion, and an f32-accurate erf.

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The IEEE-754 bits of `x` rounded to f32. */
export function f32ToBits(x: number): number {
  f32[0] = x;
  return u32[0] as number;
}

/** The f32 whose bits are `bits` (a u32). */
export function bitsToF32(bits: number): number {
  u32[0] = bits >>> 0;
  return f32[0] as number;
}

/** bf16 bits (low 16 of the result) of `x` rounded to f32 then to bf16, round-to-nearest-even; NaN stays a quiet NaN. */
export function f32ToBf16Bits(x: number): number {
  const b = f32ToBits(x);
  if ((b & 0x7f800000) === 0x7f800000 && (b & 0x7fffff) !== 0) return ((b >>> 16) | 0x40) & 0xffff;
  // Adding 0x7fff plus the lowest kept bit rounds to nearest with ties to even; overflow carries into the exponent (-> inf).
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}

/** The f32 value of bf16 bits (low 16 of `bits`); exact. */
export function bf16BitsToF32(bits: number): number {
  return bitsToF32((bits & 0xffff) << 16);
}

/** f16 bits of `x` rounded to f32 then to f16 (round-to-nearest-even, overflow -> inf, subnormals kept). */
export function f32ToF16Bits(x: number): number {
  const b = f32ToBits(x);
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  const man = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (man !== 0 ? 0x200 | (man >>> 13) : 0);
  // Unbiased exponent re-biased for f16 (bias 15).
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal (or zero) in f16: shift the full significand right, rounding to nearest even.
    if (e < -10) return sign;
    const full = man | 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = full & ((1 << shift) - 1);
    let m = full >>> shift;
    if (rest > half || (rest === half && (m & 1) === 1)) m++;
    return sign | m;
  }
  let h = (e << 10) | (man >>> 13);
  const rest = man & 0x1fff;
  // Carry from rounding may overflow into the exponent, which correctly yields the next binade or inf.
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1) === 1)) h++;
  return sign | h;
}

/** The f32 value of f16 bits (low 16 of `bits`); exact. */
export function f16BitsToF32(bits: number): number {
  const h = bits & 0xffff;
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const man = h & 0x3ff;
  if (exp === 0) return sign * man * 2 ** -24;
  if (exp === 0x1f) return man === 0 ? sign * Infinity : NaN;
  return sign * (1024 + man) * 2 ** (exp - 25);
}

/** f32 -> i32 conversion: truncate toward zero, saturate, NaN -> 0. */
export function f32ToI32(x: number): number {
  if (Number.isNaN(x)) return 0;
  if (x >= 2147483647) return 2147483647;
  if (x <= -2147483648) return -2147483648;
  return Math.trunc(x) | 0;
}

/** f32 -> u32 conversion: truncate toward zero, saturate, NaN -> 0. */
export function f32ToU32(x: number): number {
  if (Number.isNaN(x) || x <= 0) return 0;
  if (x >= 4294967295) return 4294967295;
  return Math.trunc(x) >>> 0;
}

/**
 * The error function: a Taylor series below 0.5, else Numerical Recipes `erfcc` (a Chebyshev fit with
 * relative error below 1.2e-7), which is within f32 rounding for the interpreter's purpose.
 */
export function erf(x: number): number {
  const z = Math.abs(x);
  // Near zero the Chebyshev fit's absolute error would be a large relative error: use the Taylor series.
  if (z < 0.5) {
    let term = x;
    let sum = x;
    for (let n = 1; n < 12; n++) {
      term *= (-x * x) / n;
      sum += term / (2 * n + 1);
    }
    return sum * 1.1283791670955126;
  }
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t *
                  (0.09678418 +
                    t *
                      (-0.18628806 +
                        t *
                          (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? 1 - r : r - 1;
}

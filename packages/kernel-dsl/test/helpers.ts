// Test helpers: a seeded PRNG and independent float64 references for bf16 decoding and RNE rounding.
// Written from the IEEE definitions, not from the package's bit tricks, so they can disagree with it.

/** mulberry32: a small deterministic PRNG returning floats in [0, 1). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Value of bf16 bits from sign/exponent/mantissa fields (1 sign, 8 exponent, 7 mantissa). */
export function refBf16(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const e = (bits >> 7) & 0xff;
  const m = bits & 0x7f;
  if (e === 0xff) return m === 0 ? sign * Infinity : NaN;
  if (e === 0) return sign * m * 2 ** -133;
  return sign * (1 + m / 128) * 2 ** (e - 127);
}

/** `v` rounded to the nearest bf16 value, ties to even (float64 arithmetic on exact quantities). */
export function refRoundBf16(v: number): number {
  if (!Number.isFinite(v) || v === 0) return v;
  const a = Math.abs(v);
  let e = Math.max(Math.floor(Math.log2(a)), -126);
  if (e > -126 && 2 ** e > a) e--;
  if (2 ** (e + 1) <= a) e++;
  const ulp = 2 ** (e - 7);
  const q = a / ulp;
  const fl = Math.floor(q);
  const r = q - fl > 0.5 || (q - fl === 0.5 && fl % 2 === 1) ? fl + 1 : fl;
  const out = r * ulp;
  return Math.sign(v) * (out >= 2 ** 128 ? Infinity : out);
}

/** Max |a - b| relative to `scale`, treating equal NaNs/infinities as equal. */
export function maxRelErr(actual: ArrayLike<number>, expected: ArrayLike<number>, scale: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i] as number;
    const e = expected[i] as number;
    if (Object.is(a, e)) continue;
    const err = Math.abs(a - e) / Math.max(scale[i] as number, 1e-30);
    worst = Math.max(worst, Number.isNaN(err) ? Infinity : err);
  }
  return worst;
}

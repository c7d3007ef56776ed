// A float64 erf for the reference evaluator (JavaScript has no Math.erf).
// Taylor series for |x| < 3, Lentz continued fraction for erfc beyond; relative error below 1e-14.

const TWO_OVER_SQRT_PI = 1.1283791670955126;

/** The error function in float64. */
export function erf(x: number): number {
  if (Number.isNaN(x)) return NaN;
  const ax = Math.abs(x);
  if (ax < 3) {
    // erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1)); converges fast for |x| < 3.
    let term = x,
      sum = x;
    const x2 = x * x;
    for (let n = 1; n < 200; n++) {
      term *= -x2 / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return TWO_OVER_SQRT_PI * sum;
  }
  if (ax > 6) return Math.sign(x);
  // erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...)))), evaluated by Lentz.
  const tiny = 1e-300;
  let f = ax,
    c = ax,
    d = 0;
  for (let k = 1; k < 300; k++) {
    const a = k / 2;
    d = ax + a * d;
    d = d === 0 ? tiny : 1 / d;
    c = ax + a / c;
    if (c === 0) c = tiny;
    const delta = c * d;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  const erfc = Math.exp(-ax * ax) / (Math.sqrt(Math.PI) * f);
  return Math.sign(x) * (1 - erfc);
}

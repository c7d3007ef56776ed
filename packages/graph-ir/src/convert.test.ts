import { describe, expect, test } from "vitest";
import { bf16BitsToF32, bitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToBits, f32ToF16Bits } from "./convert.js";

// Independent oracle: value of a binary format from its fields, and float64 round-to-nearest-even
// into a format with `p` significand bits, minimum normal exponent `emin`, maximum exponent `emax`.
function fieldsValue(bits: number, expBits: number, mantBits: number): number {
  const bias = 2 ** (expBits - 1) - 1;
  const sign = (bits >> (expBits + mantBits)) & 1 ? -1 : 1;
  const e = (bits >> mantBits) & (2 ** expBits - 1);
  const m = bits & (2 ** mantBits - 1);
  if (e === 2 ** expBits - 1) return m === 0 ? sign * Infinity : NaN;
  if (e === 0) return sign * m * 2 ** (1 - bias - mantBits);
  return sign * (1 + m / 2 ** mantBits) * 2 ** (e - bias);
}

function roundRNE(x: number, p: number, emin: number, emax: number): number {
  if (!Number.isFinite(x) || x === 0) return x;
  const a = Math.abs(x);
  const e = Math.max(Math.floor(Math.log2(a)), emin);
  // log2 can be off by one near powers of two; fix the exponent so 2^e <= a < 2^(e+1) (or e = emin).
  let ee = e;
  if (ee > emin && 2 ** ee > a) ee--;
  if (2 ** (ee + 1) <= a) ee++;
  const ulp = 2 ** (ee - p + 1);
  const q = a / ulp;
  const fl = Math.floor(q);
  const diff = q - fl;
  const r = diff > 0.5 || (diff === 0.5 && fl % 2 === 1) ? fl + 1 : fl;
  let v = r * ulp;
  const max = (2 - 2 ** (1 - p)) * 2 ** emax;
  if (v > max) v = Infinity;
  return Math.sign(x) * v;
}

const nextUp = (x: number): number => bitsToF32(x >= 0 ? f32ToBits(x) + 1 : f32ToBits(x) - 1);
const nextDown = (x: number): number => bitsToF32(x > 0 ? f32ToBits(x) - 1 : x === 0 ? 0x80000001 : f32ToBits(x) + 1);

function checkFormat(
  name: string,
  widen: (b: number) => number,
  narrow: (x: number) => number,
  expBits: number,
  mantBits: number,
): void {
  const bias = 2 ** (expBits - 1) - 1;
  const p = mantBits + 1,
    emin = 1 - bias,
    emax = bias;
  describe(name, () => {
    test("widening is exact for all 65536 patterns and narrowing inverts it", () => {
      let nan = 0;
      for (let b = 0; b < 65536; b++) {
        const v = widen(b);
        const want = fieldsValue(b, expBits, mantBits);
        if (Number.isNaN(want)) {
          expect(Number.isNaN(v)).toBe(true);
          // A NaN stays NaN through narrowing, sign preserved.
          const back = narrow(v);
          expect(fieldsValue(back, expBits, mantBits)).toBeNaN();
          nan++;
          continue;
        }
        if (!Object.is(v, want)) expect(v).toBe(want);
        const back = narrow(v);
        if (back !== b) expect(back.toString(16)).toBe(b.toString(16));
      }
      expect(nan).toBe(2 * (2 ** mantBits - 1));
    });

    test("narrowing matches independent float64 RNE at every pattern's neighbourhood and midpoints", () => {
      let checked = 0;
      for (let b = 0; b < 65536; b++) {
        const v = widen(b);
        if (!Number.isFinite(v)) continue;
        const up = widen(b + 1 < 65536 ? b + 1 : b);
        const candidates = [v, nextUp(v), nextDown(v)];
        if (Number.isFinite(up) && up !== v && Math.sign(up) === Math.sign(v || 1)) {
          const mid = Math.fround((v + up) / 2);
          candidates.push(mid, nextUp(mid), nextDown(mid));
        }
        for (const x of candidates) {
          const want = roundRNE(x, p, emin, emax);
          const got = widen(narrow(x));
          if (!Object.is(got, want)) expect([x, got]).toEqual([x, want]);
          checked++;
        }
      }
      expect(checked).toBeGreaterThan(65536 * 3);
    });

    test("overflow, infinities and signed zero", () => {
      const max = (2 - 2 ** (1 - p)) * 2 ** emax;
      const halfUlp = 2 ** (emax - p);
      expect(widen(narrow(Infinity))).toBe(Infinity);
      expect(widen(narrow(-Infinity))).toBe(-Infinity);
      expect(widen(narrow(1e39))).toBe(Infinity);
      expect(Object.is(widen(narrow(-0)), -0)).toBe(true);
      expect(widen(narrow(-1e-50))).toBe(-0);
      if (Number.isFinite(Math.fround(max + halfUlp))) {
        // Exactly halfway to the next (non-existent) binade value rounds to even, i.e. up to Inf.
        expect(widen(narrow(max + halfUlp))).toBe(Infinity);
        expect(widen(narrow(nextDown(Math.fround(max + halfUlp))))).toBe(max);
      }
    });
  });
}

checkFormat("f16", f16BitsToF32, f32ToF16Bits, 5, 10);
checkFormat("bf16", bf16BitsToF32, f32ToBf16Bits, 8, 7);

test("f16 subnormal boundaries by hand", () => {
  expect(f32ToF16Bits(2 ** -24)).toBe(0x0001);
  // 2^-25 is exactly half the smallest subnormal: ties to even (zero).
  expect(f32ToF16Bits(2 ** -25)).toBe(0x0000);
  expect(f32ToF16Bits(Math.fround(2 ** -25 * 1.0000001))).toBe(0x0001);
  expect(f32ToF16Bits(1.5 * 2 ** -24)).toBe(0x0002);
  expect(f32ToF16Bits(65504)).toBe(0x7bff);
  expect(f32ToF16Bits(65520)).toBe(0x7c00);
  expect(f32ToBf16Bits(1 + 2 ** -8)).toBe(0x3f80);
  expect(f32ToBf16Bits(1 + 3 * 2 ** -8)).toBe(0x3f82);
});

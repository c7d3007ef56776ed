// Numeric helper tests: f32 -> bf16/f16 RNE rounding and decoding, checked against a float64 reference that
// rounds by value (nearest representable, ties to even mantissa), not by bit manipulation.

import { describe, expect, it } from "vitest";
import { bf16BitsToF32, erf, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits, f32ToI32, f32ToU32 } from "./numeric.js";

/** Rounds `v` to a binary format with `m` mantissa bits, minimum normal exponent `emin`, largest exponent `emax`. */
function refRound(v: number, m: number, emin: number, emax: number): number {
  if (!Number.isFinite(v) || v === 0) return v;
  const a = Math.abs(v);
  let e = Math.max(Math.floor(Math.log2(a)), emin);
  if (e > emin && 2 ** e > a) e--;
  if (2 ** (e + 1) <= a) e++;
  const ulp = 2 ** (e - m);
  const q = a / ulp;
  const fl = Math.floor(q);
  const r = q - fl > 0.5 || (q - fl === 0.5 && fl % 2 === 1) ? fl + 1 : fl;
  const out = r * ulp;
  return Math.sign(v) * (out >= 2 ** (emax + 1) ? Infinity : out);
}

function samples(): number[] {
  const out: number[] = [
    0,
    -0,
    1,
    -1,
    65504,
    65520,
    65519.99,
    2 ** -24,
    2 ** -25,
    3 * 2 ** -26,
    2 ** -14,
    1 + 2 ** -11,
    1 + 3 * 2 ** -11,
    3.4e38,
    -3.4e38,
    1e-40,
  ];
  let s = 12345;
  for (let i = 0; i < 4000; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    // Random f32 bit patterns over the finite range, plus values near the f16 range.
    const bits = s;
    const f = new Float32Array(new Uint32Array([bits]).buffer)[0] as number;
    if (Number.isFinite(f)) out.push(f);
    out.push(Math.fround(((s / 2 ** 32) * 2 - 1) * 2 ** ((i % 40) - 26)));
  }
  return out.map(Math.fround);
}

describe("16-bit float conversion", () => {
  it("f32 -> bf16 rounds to nearest even, decoding exactly", () => {
    for (const v of samples()) {
      const got = bf16BitsToF32(f32ToBf16Bits(v));
      const want = refRound(v, 7, -126, 127);
      expect(Object.is(got, want), `bf16(${v}) = ${got}, want ${want}`).toBe(true);
    }
  });

  it("f32 -> f16 rounds to nearest even with subnormals and overflow to infinity", () => {
    for (const v of samples()) {
      const got = f16BitsToF32(f32ToF16Bits(v));
      const want = refRound(v, 10, -14, 15);
      expect(Object.is(got, want), `f16(${v}) = ${got}, want ${want}`).toBe(true);
    }
  });

  it("keeps NaN a NaN and infinities infinite", () => {
    expect(bf16BitsToF32(f32ToBf16Bits(NaN))).toBeNaN();
    expect(f16BitsToF32(f32ToF16Bits(NaN))).toBeNaN();
    expect(f32ToBf16Bits(-Infinity)).toBe(0xff80);
    expect(f32ToF16Bits(Infinity)).toBe(0x7c00);
  });
});

describe("conversions and erf", () => {
  it("saturates float -> int", () => {
    expect([f32ToI32(-2.9), f32ToI32(3e9), f32ToI32(-3e9), f32ToI32(NaN)]).toEqual([-2, 2147483647, -2147483648, 0]);
    expect([f32ToU32(-1), f32ToU32(5e9), f32ToU32(7.9)]).toEqual([0, 4294967295, 7]);
  });

  it("erf matches tabulated values to f32 accuracy", () => {
    // Abramowitz & Stegun table 7.1 values.
    const table: [number, number][] = [
      [0.1, 0.112462916],
      [0.5, 0.5204998778],
      [1, 0.8427007929],
      [2, 0.995322265],
      [-1.5, -0.9661051465],
      [1e-4, 1.1283791633e-4],
    ];
    for (const [x, want] of table) expect(Math.abs(erf(x) - want) / Math.abs(want)).toBeLessThan(2e-7);
  });
});

// Decoder tests against the spec: blocks are packed by hand from known integer fields (test/spec-pack.ts),
// and every element must decode to fround(d·scale·q − dmin·min) computed in float64 from those fields.
import { describe, expect, test } from "vitest";
import { f16Bits, pack2bit, packScales6, putF16 } from "../../test/spec-pack.js";
import { decodePacked } from "./format.js";
import { QUANT_FORMATS } from "./registry.js";
import { rng } from "@poot/testkit";

const ints = (r: () => number, n: number, lo: number, hi: number) =>
  Array.from({ length: n }, () => lo + Math.floor(r() * (hi - lo + 1)));

function check(name: keyof typeof QUANT_FORMATS, block: Uint8Array, expected: (i: number) => number): void {
  const out = decodePacked(QUANT_FORMATS[name], block);
  expect(out.length).toBe(QUANT_FORMATS[name].blockElems);
  for (let i = 0; i < out.length; i++) {
    if (out[i] !== Math.fround(expected(i)))
      throw new Error(`${name} element ${i}: got ${out[i]}, want ${Math.fround(expected(i))}`);
  }
}

describe("legacy 32-element formats", () => {
  const r = rng(1);
  test("Q4_0: (q-8)·d, element j low nibble / j+16 high nibble", () => {
    const q = ints(r, 32, 0, 15),
      d = 0.013671875,
      b = new Uint8Array(18);
    putF16(b, 0, d);
    for (let j = 0; j < 16; j++) b[2 + j] = q[j]! | (q[j + 16]! << 4);
    check("Q4_0", b, (i) => (q[i]! - 8) * d);
  });
  test("Q4_1: q·d + m", () => {
    const q = ints(r, 32, 0, 15),
      d = 0.0078125,
      m = -0.123046875,
      b = new Uint8Array(20);
    putF16(b, 0, d);
    putF16(b, 2, m);
    for (let j = 0; j < 16; j++) b[4 + j] = q[j]! | (q[j + 16]! << 4);
    check("Q4_1", b, (i) => q[i]! * d + m);
  });
  test("Q5_0: (q-16)·d with bit 4 of element j at bit j of qh", () => {
    const q = ints(r, 32, 0, 31),
      d = -0.001953125,
      b = new Uint8Array(22);
    putF16(b, 0, d);
    let qh = 0;
    for (let j = 0; j < 32; j++) qh |= ((q[j]! >> 4) & 1) << j;
    new DataView(b.buffer).setUint32(2, qh >>> 0, true);
    for (let j = 0; j < 16; j++) b[6 + j] = (q[j]! & 15) | ((q[j + 16]! & 15) << 4);
    check("Q5_0", b, (i) => (q[i]! - 16) * d);
  });
  test("Q5_1: q·d + m", () => {
    const q = ints(r, 32, 0, 31),
      d = 0.0302734375,
      m = 0.5,
      b = new Uint8Array(24);
    putF16(b, 0, d);
    putF16(b, 2, m);
    let qh = 0;
    for (let j = 0; j < 32; j++) qh |= ((q[j]! >> 4) & 1) << j;
    new DataView(b.buffer).setUint32(4, qh >>> 0, true);
    for (let j = 0; j < 16; j++) b[8 + j] = (q[j]! & 15) | ((q[j + 16]! & 15) << 4);
    check("Q5_1", b, (i) => q[i]! * d + m);
  });
  test("Q8_0: signed q·d", () => {
    const q = ints(r, 32, -128, 127),
      d = 0.000732421875,
      b = new Uint8Array(34);
    putF16(b, 0, d);
    for (let j = 0; j < 32; j++) b[2 + j] = q[j]! & 0xff;
    check("Q8_0", b, (i) => q[i]! * d);
  });
  test("F16, BF16 and F32 widen exactly (incl. subnormal, inf)", () => {
    const xs = [0, -0, 1, -2.5, 65504, 2 ** -24, 2 ** -14, Infinity];
    const b = new Uint8Array(2 * xs.length);
    xs.forEach((x, i) => putF16(b, 2 * i, x === Infinity ? 65504 : x));
    b[2 * 7] = 0x00;
    b[2 * 7 + 1] = 0x7c;
    expect(Array.from(decodePacked(QUANT_FORMATS.F16, b))).toEqual([
      0,
      -0,
      1,
      -2.5,
      65504,
      2 ** -24,
      2 ** -14,
      Infinity,
    ]);
    const bf = new Uint8Array([0x80, 0x3f, 0x20, 0xc1, 0x80, 0x7f]);
    expect(Array.from(decodePacked(QUANT_FORMATS.BF16, bf))).toEqual([1, -10, Infinity]);
    const f = new Uint8Array(new Float32Array([3.25, -1e-30]).buffer);
    expect(Array.from(decodePacked(QUANT_FORMATS.F32, f))).toEqual([3.25, Math.fround(-1e-30)]);
    expect(f16Bits(1)).toBe(0x3c00);
  });
});

describe("K-quants (256-element super-blocks)", () => {
  const r = rng(2);
  test("Q2_K: d·(sc&15)·q − dmin·(sc>>4) per 16-element sub-block", () => {
    const L = ints(r, 256, 0, 3),
      sc = ints(r, 16, 0, 15),
      mn = ints(r, 16, 0, 15);
    const d = 0.0107421875,
      dmin = 0.00341796875,
      b = new Uint8Array(84);
    for (let j = 0; j < 16; j++) b[j] = sc[j]! | (mn[j]! << 4);
    pack2bit(L, b, 16);
    putF16(b, 80, d);
    putF16(b, 82, dmin);
    check("Q2_K", b, (i) => d * sc[i >> 4]! * L[i]! - dmin * mn[i >> 4]!);
  });
  test("Q3_K: d·(s−32)·(q−4), 6-bit scales split 4+2 bits, high bit of q in hmask", () => {
    const L = ints(r, 256, 0, 7),
      ls = ints(r, 16, 0, 63),
      d = -0.0205078125,
      b = new Uint8Array(110);
    // hmask: element j -> byte j%32, bit j/32 (set when q > 3); the low 2 bits go to qs.
    for (let j = 0; j < 256; j++) if (L[j]! > 3) b[j % 32]! |= 1 << (j >> 5);
    pack2bit(
      L.map((x) => x & 3),
      b,
      32,
    );
    for (let j = 0; j < 16; j++) {
      const l = ls[j]!;
      if (j < 8) b[96 + j] = l & 0xf;
      else b[96 + j - 8]! |= (l & 0xf) << 4;
      b[96 + 8 + (j % 4)]! |= (l >> 4) << (2 * (j >> 2));
    }
    putF16(b, 108, d);
    check("Q3_K", b, (i) => d * (ls[i >> 4]! - 32) * (L[i]! - 4));
  });
  test("Q4_K: d·sc·q − dmin·m per 32-element sub-block, 6-bit packed scales", () => {
    const L = ints(r, 256, 0, 15),
      ls = ints(r, 8, 0, 63),
      lm = ints(r, 8, 0, 63);
    const d = 0.00098419189453125,
      dmin = 0.0001220703125,
      b = new Uint8Array(144);
    putF16(b, 0, d);
    putF16(b, 2, dmin);
    packScales6(ls, lm, b, 4);
    for (let j = 0; j < 256; j += 64)
      for (let l = 0; l < 32; l++) b[16 + j / 2 + l] = L[j + l]! | (L[j + l + 32]! << 4);
    check("Q4_K", b, (i) => d * ls[i >> 5]! * L[i]! - dmin * lm[i >> 5]!);
  });
  test("Q5_K: Q4_K plus fifth bit in qh (bit 2k / 2k+1 for the k-th 64 chunk)", () => {
    const L = ints(r, 256, 0, 31),
      ls = ints(r, 8, 0, 63),
      lm = ints(r, 8, 0, 63);
    const d = 0.0029296875,
      dmin = 0.00048828125,
      b = new Uint8Array(176);
    putF16(b, 0, d);
    putF16(b, 2, dmin);
    packScales6(ls, lm, b, 4);
    let m1 = 1,
      m2 = 2;
    for (let n = 0; n < 256; n += 64) {
      for (let j = 0; j < 32; j++) {
        if (L[n + j]! > 15) b[16 + j]! |= m1;
        if (L[n + j + 32]! > 15) b[16 + j]! |= m2;
        b[48 + n / 2 + j] = (L[n + j]! & 15) | ((L[n + j + 32]! & 15) << 4);
      }
      m1 <<= 2;
      m2 <<= 2;
    }
    check("Q5_K", b, (i) => d * ls[i >> 5]! * L[i]! - dmin * lm[i >> 5]!);
  });
  test("Q6_K: d·sc·(q−32), low 4 bits in ql, high 2 bits in qh, int8 scales per 16", () => {
    const L = ints(r, 256, 0, 63),
      sc = ints(r, 16, -128, 127),
      d = 0.000244140625,
      b = new Uint8Array(210);
    for (let j = 0; j < 256; j += 128) {
      const ql = j / 2,
        qh = 128 + j / 4;
      for (let l = 0; l < 32; l++) {
        const [a, bb, c, e] = [L[j + l]!, L[j + l + 32]!, L[j + l + 64]!, L[j + l + 96]!];
        b[ql + l] = (a & 15) | ((c & 15) << 4);
        b[ql + l + 32] = (bb & 15) | ((e & 15) << 4);
        b[qh + l] = (a >> 4) | ((bb >> 4) << 2) | ((c >> 4) << 4) | ((e >> 4) << 6);
      }
    }
    for (let j = 0; j < 16; j++) b[192 + j] = sc[j]! & 0xff;
    putF16(b, 208, d);
    check("Q6_K", b, (i) => d * sc[i >> 4]! * (L[i]! - 32));
  });
});

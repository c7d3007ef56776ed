// Spec-side block packers for the decoder tests: they lay integer fields out the way ggml's
// quantize_row_*_ref writes them, so a decoder that reads them back correctly matches the spec.

/** Encodes an f16-exact number to binary16 bits (throws if not exact: tests pick exact scales). */
export function f16Bits(x: number): number {
  if (x === 0) return Object.is(x, -0) ? 0x8000 : 0;
  const sign = x < 0 ? 0x8000 : 0;
  const a = Math.abs(x);
  const e = Math.floor(Math.log2(a));
  if (e < -14) {
    const m = a / 2 ** -24;
    if (!Number.isInteger(m)) throw new Error(`${x} not f16-exact`);
    return sign | m;
  }
  const m = (a / 2 ** e - 1) * 1024;
  if (!Number.isInteger(m) || e > 15) throw new Error(`${x} not f16-exact`);
  return sign | ((e + 15) << 10) | m;
}

export function putF16(b: Uint8Array, o: number, x: number): void {
  const h = f16Bits(x);
  b[o] = h & 0xff;
  b[o + 1] = h >> 8;
}

/** Q2_K / Q3_K share the 2-bit `qs` packing: element j+32k+l of each 128 half goes to byte j/4+l, bits 2k. */
export function pack2bit(L: number[], qs: Uint8Array, base: number): void {
  for (let j = 0; j < 256; j += 128) {
    for (let l = 0; l < 32; l++) {
      qs[base + j / 4 + l] =
        (L[j + l]! & 3) | ((L[j + l + 32]! & 3) << 2) | ((L[j + l + 64]! & 3) << 4) | ((L[j + l + 96]! & 3) << 6);
    }
  }
}

/** Packs 8 (scale, min) 6-bit pairs into the 12-byte Q4_K/Q5_K scales field (quantize_row_q4_K_ref). */
export function packScales6(ls: number[], lm: number[], b: Uint8Array, s: number): void {
  for (let j = 0; j < 8; j++) {
    if (j < 4) {
      b[s + j] = ls[j]!;
      b[s + j + 4] = lm[j]!;
    } else {
      b[s + j + 4] = (ls[j]! & 0xf) | ((lm[j]! & 0xf) << 4);
      b[s + j - 4]! |= (ls[j]! >> 4) << 6;
      b[s + j]! |= (lm[j]! >> 4) << 6;
    }
  }
}

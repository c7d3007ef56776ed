// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3") in the kernel DSL, shared by
// the uniform generator and the samplers; also the byte-exact u32 -> uniform conversions they agree on.

import type { Builder, Val } from "@poot/kernel-dsl";

const M0 = 0xd2511f53;
const M1 = 0xcd9e8d57;
const W0 = 0x9e3779b9;
const W1 = 0xbb67ae85;

/** High and low 32 bits of the 64-bit product `m * b` (m a constant); the IR has no mulhi, so 16-bit halves. */
function mulhilo(k: Builder, m: number, b: Val<"u32">): { hi: Val<"u32">; lo: Val<"u32"> } {
  const { let_, u32 } = k;
  const al = u32(m & 0xffff);
  const ah = u32(m >>> 16);
  const bl = let_(b.and(0xffff), "bl");
  const bh = let_(b.shr(16), "bh");
  const lh = let_(al.mul(bh), "lh");
  const hl = let_(ah.mul(bl), "hl");
  // Carries out of the low half: (al*bl >> 16) + low halves of the cross products, each < 2^16 * 3.
  const mid = let_(al.mul(bl).shr(16).add(lh.and(0xffff)).add(hl.and(0xffff)), "mid");
  const hi = let_(ah.mul(bh).add(lh.shr(16)).add(hl.shr(16)).add(mid.shr(16)), "hi");
  const lo = let_(b.mul(m), "lo");
  return { hi, lo };
}

/**
 * Philox-4x32-10 of counter `c` under key `key`: four u32 words, bit-identical to Random123's philox4x32_10.
 * Emits ~60 `let`s (10 unrolled rounds); call it once per 4 random words.
 */
export function philox4x32(k: Builder, c: readonly Val<"u32">[], key: readonly Val<"u32">[]): Val<"u32">[] {
  const { let_ } = k;
  let [c0, c1, c2, c3] = c as [Val<"u32">, Val<"u32">, Val<"u32">, Val<"u32">];
  let [k0, k1] = key as [Val<"u32">, Val<"u32">];
  for (let r = 0; r < 10; r++) {
    if (r > 0) {
      k0 = let_(k0.add(W0), "pk0");
      k1 = let_(k1.add(W1), "pk1");
    }
    const p0 = mulhilo(k, M0, c0);
    const p1 = mulhilo(k, M1, c2);
    const n0 = let_(p1.hi.xor(c1).xor(k0), "pc0");
    const n2 = let_(p0.hi.xor(c3).xor(k1), "pc2");
    [c0, c1, c2, c3] = [n0, p1.lo, n2, p0.lo];
  }
  return [c0, c1, c2, c3];
}

/** Uniform in [0, 1): the top 24 bits of `x` times 2^-24 (exact in f32). */
export function uniformFromBits(x: Val<"u32">): Val<"f32"> {
  return x
    .shr(8)
    .f32()
    .mul(2 ** -24);
}

/** Uniform in the open interval (0, 1): (top 23 bits + 0.5) * 2^-23, exact in f32; safe under log. */
export function uniformOpenFromBits(x: Val<"u32">): Val<"f32"> {
  return x
    .shr(9)
    .f32()
    .add(0.5)
    .mul(2 ** -23);
}

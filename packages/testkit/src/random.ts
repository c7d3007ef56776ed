// Deterministic test data: one seeded generator (mulberry32) for every package's tests, so a failure reproduces from
// its seed and the same seed gives the same numbers in every package.

/** mulberry32: a deterministic uniform generator on [0, 1) from a 32-bit `seed`. */
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

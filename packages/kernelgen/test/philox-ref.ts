// An independent Philox-4x32-10 for tests: BigInt 64-bit products (the kernels use 16-bit halves), checked
// against Random123's published known-answer vectors before anything is compared with it.

const M0 = 0xd2511f53n;
const M1 = 0xcd9e8d57n;
const MASK = 0xffffffffn;

/** Philox-4x32-10 of counter c under key k, as four u32 numbers. */
export function philoxRef(c: readonly number[], k: readonly number[]): number[] {
  let [c0, c1, c2, c3] = c.map(BigInt) as [bigint, bigint, bigint, bigint];
  let [k0, k1] = k.map(BigInt) as [bigint, bigint];
  for (let r = 0; r < 10; r++) {
    if (r > 0) {
      k0 = (k0 + 0x9e3779b9n) & MASK;
      k1 = (k1 + 0xbb67ae85n) & MASK;
    }
    const p0 = M0 * c0;
    const p1 = M1 * c2;
    [c0, c1, c2, c3] = [((p1 >> 32n) ^ c1 ^ k0) & MASK, p1 & MASK, ((p0 >> 32n) ^ c3 ^ k1) & MASK, p0 & MASK];
  }
  return [c0, c1, c2, c3].map(Number);
}

/** Word i of the stream with counter (i div 4, c1, c2, c3) and key (k0, k1). */
export function streamWord(i: number, c1: number, c2: number, c3: number, k0: number, k1: number): number {
  return philoxRef([Math.floor(i / 4), c1, c2, c3], [k0, k1])[i % 4]!;
}

// Seeded mutation fuzzing shared by the parser fuzz tests: a PRNG, byte-level mutations, and the gate (every input
// parses or raises a ModelError; heap growth bounded).
import { expect } from "vitest";
import { MemorySource, ModelError } from "@poot/models";
import { rng } from "@poot/testkit";

export { rng };

/** One random mutation family per input: byte flips, special values, u64 overwrites, splices, truncation. */
export function mutate(src: Uint8Array, r: () => number): Uint8Array {
  const pick = (n: number) => Math.floor(r() * n);
  let b = src.slice();
  const kind = pick(6);
  const hot = () => (r() < 0.7 ? pick(Math.min(b.length, 512)) : pick(b.length));
  if (kind === 0)
    for (let i = 0, n = 1 + pick(8); i < n; i++) {
      const at = hot();
      b[at] = b[at]! ^ (1 << pick(8));
    }
  else if (kind === 1) for (let i = 0, n = 1 + pick(4); i < n; i++) b[hot()] = [0, 0xff, 0x7f, 0x80, 0x01][pick(5)]!;
  else if (kind === 2) {
    const at = hot();
    const v = [0n, 1n, 0xffffffffn, 0x7fffffffffffffffn, 0xffffffffffffffffn, BigInt(pick(1 << 30))][pick(6)]!;
    for (let i = 0; i < 8 && at + i < b.length; i++) b[at + i] = Number((v >> BigInt(8 * i)) & 0xffn);
  } else if (kind === 3) b = b.slice(0, pick(b.length));
  else if (kind === 4) {
    const at = pick(b.length),
      len = pick(16);
    const end = Math.min(b.length, at + len);
    const cut = new Uint8Array(b.length - (end - at));
    cut.set(b.subarray(0, at));
    cut.set(b.subarray(end), at);
    b = cut;
  } else {
    const at = pick(b.length),
      ins = Array.from({ length: 1 + pick(8) }, () => pick(256));
    const grown = new Uint8Array(b.length + ins.length);
    grown.set(b.subarray(0, at));
    grown.set(ins, at);
    grown.set(b.subarray(at), at + ins.length);
    b = grown;
  }
  return b;
}

/** Runs `n` mutated inputs through `parse`; any exception other than a ModelError fails with the input's number. */
export function fuzz(
  seeds: Uint8Array[],
  n: number,
  seed: number,
  parse: (src: MemorySource) => unknown,
): { ok: number; typed: number } {
  const r = rng(seed);
  let ok = 0,
    typed = 0;
  const heap0 = process.memoryUsage().heapUsed;
  for (let i = 0; i < n; i++) {
    // The last seed (a real fixture header, ~10x larger) gets one input in ten.
    const input = mutate(seeds[i % 10 === 9 ? seeds.length - 1 : 0]!, r);
    try {
      parse(new MemorySource(input, `fuzz#${i}`));
      ok++;
    } catch (e) {
      if (!(e instanceof ModelError))
        throw new Error(`input #${i} (seed ${seed}) raised a non-ModelError: ${String(e)}`);
      typed++;
    }
  }
  expect(process.memoryUsage().heapUsed - heap0).toBeLessThan(256 * 2 ** 20);
  return { ok, typed };
}

// Imported argmax (two stages), Philox generator and samplers in the interpreter, checked against graph-ir's
// Reduce argmax (float64) and an independent Philox / truncation reference written from the definitions.

import { describe, expect, it } from "vitest";
import { importedKernel, importedLaunch } from "@poot/kernelgen";
import { expectExact, oracle, poisoned, randF32, rng, run } from "./helpers.js";
import { philoxRef, streamWord } from "./philox-ref.js";

describe("Philox-4x32-10", () => {
  it("the test reference reproduces Random123's known answers", () => {
    expect(philoxRef([0, 0, 0, 0], [0, 0])).toEqual([0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]);
    expect(philoxRef([0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff], [0xffffffff, 0xffffffff])).toEqual([
      0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd,
    ]);
    expect(philoxRef([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0])).toEqual([
      0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1,
    ]);
  });

  it("philox_bits at counter 0, key 0 is the first known answer", () => {
    const k = importedKernel("philox_bits");
    const out = poisoned(k, "out", 4);
    run(k, { grid: [1], buffers: { out }, uniforms: { n: 4, key0: 0, key1: 0, c1: 0, c2: 0, c3: 0 } });
    expectExact(out as Uint32Array, [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]);
  });

  for (const n of [1, 7, 261]) {
    it(`philox_bits and philox_uniform follow the documented counter layout (n=${n})`, () => {
      const u = { n, key0: 0xa4093822, key1: 0x299f31d0, c1: 0x85a308d3, c2: 0x13198a2e, c3: 0x03707344 };
      const words = Array.from({ length: n }, (_, i) => streamWord(i, u.c1, u.c2, u.c3, u.key0, u.key1));
      const grid = [Math.ceil(Math.ceil(n / 4) / 64)];
      const kb = importedKernel("philox_bits");
      const bits = poisoned(kb, "out", n);
      run(kb, { grid, buffers: { out: bits }, uniforms: u });
      expectExact(bits as Uint32Array, words);
      const ku = importedKernel("philox_uniform");
      const uni = poisoned(ku, "out", n);
      run(ku, { grid, buffers: { out: uni }, uniforms: u });
      expectExact(
        uni as Float32Array,
        words.map((w) => Math.floor(w / 256) / 2 ** 24),
      );
    });
  }
});

describe("two-stage argmax (graph-plan's ArgMaxChunk / ArgMaxCombine contract)", () => {
  const cases: [number, number, number][] = [
    [1, 1, 1],
    [2, 100, 32],
    [3, 1000, 256],
    [1, 64, 64],
    [2, 7, 3],
  ];
  for (const [rows, V, CHUNK] of cases) {
    it(`rows=${rows} V=${V} CHUNK=${CHUNK}, with planted ties and a NaN row`, () => {
      const r = rng(V * 3 + rows);
      const x = randF32(r, rows * V);
      // Ties: the maximum appears twice in row 0 (the lower index must win); row 2 (if any) holds a NaN.
      if (V > 10) {
        x[3] = 5;
        x[V - 2] = 5;
      }
      if (rows > 2) x[2 * V + 17] = NaN;
      const nChunks = Math.ceil(V / CHUNK);
      const s1 = importedLaunch("argmax_chunk", [V, CHUNK, rows]);
      const cand = poisoned(s1.kernel, "out", rows * nChunks);
      run(s1.kernel, { grid: [...s1.grid], buffers: { x, out: cand }, uniforms: s1.uniforms });
      // Stage 1 reference: each chunk's first maximal global index, from the graph's argmax over that chunk.
      const chunks = oracle(
        (b) => {
          const xr = b.const("x", "f32", [rows, V]);
          const pad = nChunks * CHUNK - V;
          // Pad the row with -inf to whole chunks (a -inf pad never beats a real element, which comes first).
          const padded =
            pad === 0
              ? xr
              : b.concat([xr, b.broadcast(b.computed("f32", [1, 1], Float32Array.of(-Infinity)), [rows, pad])], 1);
          return { i: b.argmax(b.reshape(padded, [rows, nChunks, CHUNK]), 2) };
        },
        { x },
      );
      expectExact(
        cand as Int32Array,
        Array.from(chunks.i!, (j, q) => j + (q % nChunks) * CHUNK),
      );
      const s2 = importedLaunch("argmax_combine", [V, nChunks, rows]);
      const out = poisoned(s2.kernel, "out", rows);
      run(s2.kernel, { grid: [...s2.grid], buffers: { x, candidates: cand, out }, uniforms: s2.uniforms });
      const ref = oracle((b) => ({ i: b.argmax(b.const("x", "f32", [rows, V]), 1) }), { x });
      expectExact(out as Int32Array, ref.i!);
      if (V > 10) expect((out as Int32Array)[0]).toBe(3);
    });
  }
});

interface SampleCase {
  readonly B: number;
  readonly V: number;
  readonly T: number[];
  readonly topK?: number[];
  readonly topP?: number[];
}

/** The kept set of one row per the documented rule, in float64: prefix of (s desc, i asc), ≤ k tokens, stop when mass ≥ p. */
function keptSet(s: number[], k: number, p: number): Set<number> {
  const order = s.map((_, i) => i).sort((a, b) => s[b]! - s[a]! || a - b);
  const m = Math.max(...s);
  const z = s.reduce((acc, v) => acc + Math.exp(v - m), 0);
  const kept = new Set<number>();
  let cum = 0;
  for (const i of order) {
    if (kept.size >= (k === 0 ? s.length : k)) break;
    kept.add(i);
    cum += Math.exp(s[i]! - m) / z;
    if (cum >= p) break;
  }
  return kept;
}

function sampleCase(c: SampleCase, seed: number) {
  const r = rng(seed);
  const { B, V } = c;
  const logits = randF32(r, B * V, 3);
  const rngWords = Uint32Array.from({ length: 4 * B }, () => Math.floor(r() * 2 ** 32));
  const truncate = c.topK !== undefined;
  // Noise per the documented layout, in float64; greedy rows (T ≤ 0) take none.
  const noise = new Float64Array(B * V);
  const mask = new Uint8Array(B * V).fill(1);
  const temp = new Float64Array(B);
  for (let b = 0; b < B; b++) {
    const T = c.T[b]!;
    temp[b] = T > 0 ? T : 1;
    const [k0, k1, c2, c3] = [rngWords[4 * b]!, rngWords[4 * b + 1]!, rngWords[4 * b + 2]!, rngWords[4 * b + 3]!];
    for (let i = 0; i < V && T > 0; i++) {
      const u = (Math.floor(streamWord(i, 0, c2, c3, k0, k1) / 512) + 0.5) / 2 ** 23;
      noise[b * V + i] = -Math.log(-Math.log(u));
    }
    if (truncate) {
      const s = Array.from({ length: V }, (_, i) => Math.fround(logits[b * V + i]! / temp[b]!));
      const kept = keptSet(s, T > 0 ? c.topK![b]! : 1, T > 0 ? c.topP![b]! : 1);
      for (let i = 0; i < V; i++) mask[b * V + i] = kept.has(i) ? 1 : 0;
    }
  }
  const ref = oracle(
    (g) => {
      const s = g.div(g.const("logits", "f32", [B, V]), g.const("temp", "f32", [B, 1]));
      const z = g.add(s, g.const("noise", "f32", [B, V]));
      return { i: g.argmax(g.select(g.cast(g.const("mask", "u8", [B, V]), "bool"), z, -Infinity), 1) };
    },
    { logits, temp, noise, mask },
  );
  const k = importedKernel(truncate ? "sample_top_k_top_p" : "sample_gumbel");
  const out = poisoned(k, "out", B);
  const buffers = {
    logits,
    temperature: Float32Array.from(c.T),
    rng: rngWords,
    out,
    ...(truncate ? { topK: Uint32Array.from(c.topK!), topP: Float32Array.from(c.topP!) } : {}),
  };
  run(k, { grid: [B], buffers, uniforms: { V } });
  return { got: out as Int32Array, want: ref.i!, mask };
}

describe("samplers", () => {
  it("sample_gumbel: per-row temperature, greedy rows, ragged V", () => {
    const { got, want } = sampleCase({ B: 4, V: 203, T: [1, 0.5, 0, 2] }, 11);
    expectExact(got, want);
  });

  it("sample_gumbel: one token vocabulary", () => {
    const { got } = sampleCase({ B: 2, V: 1, T: [1, 0] }, 12);
    expectExact(got, [0, 0]);
  });

  it("sample_gumbel draws follow softmax(logits / T) (chi-square over 400 draws)", () => {
    // Same row, different counters: the empirical distribution must match the softmax probabilities.
    const V = 4;
    const draws = 400;
    const logits = new Float32Array(draws * V);
    const base = [1, 0, -1, 0.5];
    for (let d = 0; d < draws; d++) logits.set(base, d * V);
    const rngWords = Uint32Array.from({ length: 4 * draws }, (_, j) =>
      j % 4 === 2 ? Math.floor(j / 4) : j % 4 === 0 ? 1234 : 0,
    );
    const k = importedKernel("sample_gumbel");
    const out = poisoned(k, "out", draws);
    run(k, {
      grid: [draws],
      buffers: { logits, temperature: new Float32Array(draws).fill(1), rng: rngWords, out },
      uniforms: { V },
    });
    const counts = [0, 0, 0, 0];
    for (const t of out as Int32Array) counts[t]! += 1;
    const z = base.reduce((a, v) => a + Math.exp(v), 0);
    const chi2 = base.reduce(
      (a, v, i) => a + (counts[i]! - (draws * Math.exp(v)) / z) ** 2 / ((draws * Math.exp(v)) / z),
      0,
    );
    // 3 degrees of freedom: P(chi2 > 16.27) = 0.001.
    expect(chi2).toBeLessThan(16.27);
  });

  it("sample_top_k_top_p: top-k only, top-p only, both, off, and greedy rows", () => {
    const { got, want, mask } = sampleCase(
      { B: 6, V: 150, T: [1, 1, 0.7, 1.5, 0, 1], topK: [5, 0, 20, 0, 7, 1], topP: [1, 0.6, 0.9, 1, 0.5, 1] },
      21,
    );
    expectExact(got, want);
    // Every sampled token lies in its row's kept set.
    for (let b = 0; b < 6; b++) expect(mask[b * 150 + got[b]!]).toBe(1);
  });

  it("sample_top_k_top_p: k larger than V and a one-token vocabulary", () => {
    expectExact(
      sampleCase({ B: 2, V: 9, T: [1, 2], topK: [50, 3], topP: [0.99, 1] }, 31).got,
      sampleCase({ B: 2, V: 9, T: [1, 2], topK: [50, 3], topP: [0.99, 1] }, 31).want,
    );
    expectExact(sampleCase({ B: 1, V: 1, T: [1], topK: [4], topP: [0.3] }, 32).got, [0]);
  });
});

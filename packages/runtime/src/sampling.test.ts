// Samplers against hand-computed float64 distributions: exact nuclei for top-k / top-p / min-p, penalties
// against hand-applied logit adjustments, and a seeded draw's frequencies within a chi-square bound.
import { describe, expect, it } from "vitest";
import { RuntimeError } from "./errors.js";
import { Rng } from "./rng.js";
import { applyPenalties, checkSampling, drawToken, sampleToken, samplingDistribution } from "./sampling.js";

const logits = Float32Array.from([2, 1, 0, -1, 3]);
const softmax = (xs: readonly number[]): number[] => {
  const e = xs.map((x) => Math.exp(x));
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / z);
};

describe("samplingDistribution", () => {
  it("top-p keeps exactly the hand-computed nucleus, renormalized", () => {
    // softmax: id4 0.6364, id0 0.2341, id1 0.0861 -> cumulative 0.6364, 0.8705, 0.9566 >= 0.9.
    const d = samplingDistribution(logits, { topP: 0.9 });
    expect(Array.from(d.ids)).toEqual([4, 0, 1]);
    const z = Math.exp(3) + Math.exp(2) + Math.exp(1);
    expect(d.probs[0]).toBeCloseTo(Math.exp(3) / z, 14);
    expect(d.probs[2]).toBeCloseTo(Math.exp(1) / z, 14);
    // At 0.87 the second token already reaches the mass.
    expect(Array.from(samplingDistribution(logits, { topP: 0.87 }).ids)).toEqual([4, 0]);
  });

  it("top-k, min-p and temperature match hand computations", () => {
    const k = samplingDistribution(logits, { topK: 2 });
    expect(Array.from(k.ids)).toEqual([4, 0]);
    expect(k.probs[0]).toBeCloseTo(Math.exp(3) / (Math.exp(3) + Math.exp(2)), 14);
    // min-p 0.3: p_i / p_max = e^(l_i - 3): e^-1 = 0.37 stays, e^-2 = 0.14 goes.
    expect(Array.from(samplingDistribution(logits, { minP: 0.3 }).ids)).toEqual([4, 0]);
    const t = samplingDistribution(logits, { temperature: 0.5 });
    const want = softmax([2, 1, 0, -1, 3].map((x) => x / 0.5));
    expect(Array.from(t.ids)).toEqual([4, 0, 1, 2, 3]);
    Array.from(t.ids).forEach((id, i) => expect(t.probs[i]).toBeCloseTo(want[id]!, 14));
    expect(Array.from(samplingDistribution(logits, { temperature: 0 }).ids)).toEqual([4]);
  });

  it("NaN or all -inf logits are a bad-logits error, never a silent token 0", () => {
    for (const row of [
      [Number.NaN, Number.NaN],
      [-Infinity, -Infinity],
    ]) {
      for (const t of [0, 1]) {
        let err: unknown;
        try {
          sampleToken(Float32Array.from(row), [], [], { temperature: t }, new Rng(1));
        } catch (e) {
          err = e;
        }
        expect((err as RuntimeError).code).toBe("bad-logits");
      }
    }
  });

  it("drops -inf logits and breaks probability ties by lower id", () => {
    const d = samplingDistribution(Float32Array.from([0, -Infinity, 0, -1]), {});
    expect(Array.from(d.ids)).toEqual([0, 2, 3]);
  });
});

describe("penalties", () => {
  it("repetition over the context, frequency and presence over generated tokens, as hand-applied", () => {
    const l = Float32Array.from([1.5, -2, 0.5, 3]);
    applyPenalties(l, [0, 1, 1], [1, 1, 3], { repetitionPenalty: 2, frequencyPenalty: 0.5, presencePenalty: 0.25 });
    // id0: 1.5 / 2; id1: -2 * 2 - 2 * 0.5 - 0.25; id2 untouched; id3: 3 - 0.5 - 0.25.
    expect(Array.from(l)).toEqual([0.75, -5.25, 0.5, 2.25]);
  });

  it("a penalty can change the greedy choice", () => {
    const l = Float32Array.from([1, 0.9]);
    expect(sampleToken(l, [], [], { temperature: 0 }, new Rng(1))).toBe(0);
    expect(sampleToken(l, [0], [], { temperature: 0, repetitionPenalty: 1.2 }, new Rng(1))).toBe(1);
    expect(Array.from(l)).toEqual([1, Math.fround(0.9)]);
  });
});

describe("seeded sampling", () => {
  it("empirical frequencies at temperature 0.8 match the softmax within a chi-square bound (df 5, p = 0.001)", () => {
    const l = [0.5, -0.3, 1.2, 0, 2, -1];
    const p = softmax(l.map((x) => x / 0.8));
    const d = samplingDistribution(Float32Array.from(l), { temperature: 0.8 });
    const rng = new Rng(1234);
    const n = 20000;
    const counts = new Array<number>(6).fill(0);
    for (let i = 0; i < n; i++) counts[drawToken(d, rng)]!++;
    const chi2 = counts.reduce((acc, c, i) => acc + (c - n * p[i]!) ** 2 / (n * p[i]!), 0);
    expect(chi2).toBeLessThan(20.515);
    // And it is not trivially satisfied: frequencies of a uniform draw are far off.
    const uniform = counts.reduce((acc, _c, i) => acc + (n / 6 - n * p[i]!) ** 2 / (n * p[i]!), 0);
    expect(uniform).toBeGreaterThan(1000);
  });

  it("one seed reproduces the same draws; another seed differs", () => {
    const d = samplingDistribution(logits, { temperature: 1.5 });
    const draws = (seed: number) => {
      const r = new Rng(seed);
      return Array.from({ length: 50 }, () => drawToken(d, r));
    };
    expect(draws(7)).toEqual(draws(7));
    expect(draws(7)).not.toEqual(draws(8));
  });

  it("xoshiro128** from state (1, 2, 3, 4) gives the published first outputs", () => {
    const r = Rng.fromState(1, 2, 3, 4);
    expect(Array.from({ length: 6 }, () => r.nextU32())).toEqual([11520, 0, 5927040, 70819200, 2031721883, 1637235492]);
  });
});

describe("checkSampling", () => {
  it.each([
    [{ temperature: -1 }, "temperature"],
    [{ topP: 0 }, "topP"],
    [{ topP: 1.5 }, "topP"],
    [{ topK: 2.5 }, "topK"],
    [{ minP: -0.1 }, "minP"],
    [{ repetitionPenalty: 0 }, "repetitionPenalty"],
    [{ frequencyPenalty: Number.NaN }, "frequencyPenalty"],
    [{ seed: 1.5 }, "seed"],
  ])("%o is a bad-sampling error naming %s", (o, param) => {
    try {
      checkSampling(o);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(RuntimeError);
      expect((e as RuntimeError).code).toBe("bad-sampling");
      expect((e as RuntimeError).context.param).toBe(param);
    }
  });
});

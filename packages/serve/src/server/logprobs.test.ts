// tokenLogprobs against log-softmax values computed by hand (float64, from the definition).
import { describe, expect, test } from "vitest";
import { tokenLogprobs } from "./logprobs.js";

describe("tokenLogprobs", () => {
  test("log-softmax of [1, 2, 3]: logsumexp = 3 + ln(1 + e^-1 + e^-2)", () => {
    const lse = 3 + Math.log(1 + Math.exp(-1) + Math.exp(-2)); // 3.4076059644443806
    const r = tokenLogprobs(Float32Array.of(1, 2, 3), 1, 2);
    expect(r.logprob).toBeCloseTo(2 - lse, 12);
    expect(r.logprob).toBeCloseTo(-1.4076059644443806, 12);
    expect(r.top).toEqual([
      { id: 2, logprob: expect.closeTo(-0.4076059644443806, 12) },
      { id: 1, logprob: expect.closeTo(-1.4076059644443806, 12) },
    ]);
  });

  test("top 0 gives no alternatives; ties keep the lower id first", () => {
    expect(tokenLogprobs([0, 0, 0], 2, 0)).toEqual({ logprob: expect.closeTo(-Math.log(3), 12), top: [] });
    expect(tokenLogprobs([5, 7, 7, 1], 0, 3).top.map((t) => t.id)).toEqual([1, 2, 0]);
  });

  test("large logits do not overflow (shifted by the maximum)", () => {
    const r = tokenLogprobs([1000, 1000], 0, 1);
    expect(r.logprob).toBeCloseTo(-Math.LN2, 12);
    expect(r.top[0]!.id).toBe(0);
  });

  test("top larger than the vocabulary returns every token, sorted", () => {
    const r = tokenLogprobs([0.5, -1, 2], 0, 5);
    expect(r.top.map((t) => t.id)).toEqual([2, 0, 1]);
    const total = r.top.reduce((a, t) => a + Math.exp(t.logprob), 0);
    expect(total).toBeCloseTo(1, 12);
  });
});

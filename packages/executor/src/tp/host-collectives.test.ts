// The host collectives: the all-reduce sums in rank order with f32 rounding after each add (so the result is fixed
// whatever order ranks finish in), all-gather and slicing are inverses along any axis.
import { describe, expect, it } from "vitest";
import { allGather, allReduceSum, slicePiece } from "./host-collectives.js";

describe("host collectives", () => {
  it("all-reduce adds in rank order, rounding to f32 after each add", () => {
    // (1e8 + 1) rounds back to 1e8 in f32, so rank order gives 0; any other order (or float64) would give 1.
    const parts = [new Float32Array([1e8, 2]), new Float32Array([1, 3]), new Float32Array([-1e8, 4])];
    expect([...allReduceSum(parts, new Float32Array(2))]).toEqual([0, 9]);
    expect([...allReduceSum([parts[0]!, parts[2]!, parts[1]!], new Float32Array(2))]).toEqual([1, 9]);
  });

  it("all-gather undoes slicing on every axis", () => {
    const shape = [2, 4, 3];
    const whole = Float32Array.from({ length: 24 }, (_, i) => i);
    for (const axis of [0, 1]) {
      const ranks = 2;
      const pieces = Array.from({ length: ranks }, (_, r) => slicePiece(whole, shape, axis, r, ranks) as Float32Array);
      expect(pieces[0]).toBeInstanceOf(Float32Array);
      expect([...allGather(pieces, shape, axis)]).toEqual([...whole]);
    }
    // Rank 1's half of axis 1 of [2, 4, 3]: rows 2..3 of each outer index.
    expect([...(slicePiece(whole, shape, 1, 1, 2) as Float32Array)]).toEqual([
      6, 7, 8, 9, 10, 11, 18, 19, 20, 21, 22, 23,
    ]);
  });

  it("keeps bf16 bits as Uint16Array", () => {
    const bits = Uint16Array.from([1, 2, 3, 4]);
    expect(slicePiece(bits, [2, 2], 0, 1, 2)).toEqual(Uint16Array.from([3, 4]));
  });
});

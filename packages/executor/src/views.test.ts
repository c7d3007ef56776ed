// Byte runs of strided views, checked against element positions enumerated by hand.

import { describe, expect, test } from "vitest";
import { viewRuns as runs } from "./views.js";

describe("runs", () => {
  test("a dense layout is one run; a last-axis slice [1, 3, 4] of [1, 3, 5] at offset 1 is three runs", () => {
    expect(runs({ shape: [2, 3], strides: [3, 1], offset: 4 })).toEqual([[4, 6]]);
    expect(runs({ shape: [1, 3, 4], strides: [15, 5, 1], offset: 1 })).toEqual([[1, 4], [6, 4], [11, 4]]);
  });
  test("a transposed [3, 2] view of a [2, 3] buffer is one element per run", () => {
    expect(runs({ shape: [3, 2], strides: [1, 3], offset: 0 })).toEqual([[0, 1], [3, 1], [1, 1], [4, 1], [2, 1], [5, 1]]);
  });
});

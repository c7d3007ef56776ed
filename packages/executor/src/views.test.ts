// View layouts composed through slices and transposes, and byte runs of strided views, checked against element positions enumerated by hand.

import { describe, expect, test } from "vitest";
import { Builder } from "@poot/graph-ir";
import { viewLayout, viewRuns as runs } from "./views.js";

describe("runs", () => {
  test("a dense layout is one run; a last-axis slice [1, 3, 4] of [1, 3, 5] at offset 1 is three runs", () => {
    expect(runs({ shape: [2, 3], strides: [3, 1], offset: 4 })).toEqual([[4, 6]]);
    expect(runs({ shape: [1, 3, 4], strides: [15, 5, 1], offset: 1 })).toEqual([
      [1, 4],
      [6, 4],
      [11, 4],
    ]);
  });
  test("a transposed [3, 2] view of a [2, 3] buffer is one element per run", () => {
    expect(runs({ shape: [3, 2], strides: [1, 3], offset: 0 })).toEqual([
      [0, 1],
      [3, 1],
      [1, 1],
      [4, 1],
      [2, 1],
      [5, 1],
    ]);
  });
});

describe("viewLayout", () => {
  test("composes a slice then a transpose over the sliced value's buffer", () => {
    const b = new Builder();
    const x = b.exp(b.slot("Token", "x", "f32", [4, 6]));
    // rows 1..3, columns 0, 2, 4, then transposed: element [c, r] is x[1 + r, 2c], at (1 + r) * 6 + 2c.
    const t = b.transpose(b.slice(x, [1, 0], [3, 6], [1, 2]), [1, 0]);
    b.output("t", t);
    const g = b.build();
    const l = viewLayout(g, t.id, x.id);
    expect(l).toEqual({ shape: [3, 2], strides: [2, 6], offset: 6 });
    expect(runs(l).flatMap(([o, n]) => Array.from({ length: n }, (_, i) => o + i))).toEqual([6, 12, 8, 14, 10, 16]);
  });
  test("an in-place State write covers its State densely", () => {
    const b = new Builder();
    const s = b.state("s", "f32", [4, 2]);
    const zero = b.computed("i32", [], new Int32Array([0]));
    const next = b.dynamicUpdateSlice(s, b.slot("Token", "row", "f32", [1, 2]), [
      b.reshape(b.slot("Pos", "pos", "i32", [1]), []),
      zero,
    ]);
    b.setState(s, next);
    expect(viewLayout(b.build(), next.id, s.id)).toEqual({ shape: [4, 2], strides: [2, 1], offset: 0 });
  });
});

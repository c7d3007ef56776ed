import { describe, expect, test } from "vitest";
import { evalOp, expectCode, flat, indices, typeOp, type T } from "../../test/util.js";

const seq = (n: number): number[] => Array.from({ length: n }, (_, k) => k + 1);
const t = (shape: number[], dtype: T["dtype"] = "f32"): T => ({
  dtype,
  shape,
  data: seq(shape.reduce((a, b) => a * b, 1)),
});

describe("movement ops against index oracles", () => {
  test("Reshape keeps row-major order", () => {
    const out = evalOp("Reshape", [t([2, 3])], { shape: [3, 1, 2] });
    expect(out.shape).toEqual([3, 1, 2]);
    expect([...out.data]).toEqual(seq(6));
    expectCode(() => typeOp("Reshape", [{ dtype: "f32", shape: [2, 3] }], { shape: [4] }), "shape-mismatch");
  });

  test.each([
    [[5], [1], [5], [2]],
    [
      [3, 4],
      [0, 1],
      [3, 4],
      [2, 2],
    ],
    [
      [3, 4],
      [1, 0],
      [2, 4],
      [1, 3],
    ],
    [
      [2, 3, 2],
      [0, 0, 1],
      [2, 3, 2],
      [1, 2, 1],
    ],
    [[4], [2], [2], [1]],
  ])("Slice %j start %j end %j step %j", (shape, start, end, step) => {
    const x = t(shape);
    const out = evalOp("Slice", [x], { start, end, step });
    const outShape = shape.map((_, i) => Math.ceil((end[i]! - start[i]!) / step[i]!));
    expect(out.shape).toEqual(outShape);
    for (const idx of indices(outShape))
      expect(out.data[flat(outShape, idx)]).toBe(
        x.data[
          flat(
            shape,
            idx.map((v, i) => start[i]! + v * step[i]!),
          )
        ],
      );
  });

  test.each([
    [[3], [2, 3]],
    [
      [2, 1],
      [2, 4],
    ],
    [[], [2, 2]],
    [
      [1, 1, 3],
      [2, 4, 3],
    ],
    [[2], [2]],
  ])("Broadcast %j -> %j", (from, to) => {
    const x = t(from);
    const out = evalOp("Broadcast", [x], { shape: to });
    for (const idx of indices(to)) {
      const off = to.length - from.length;
      expect(out.data[flat(to, idx)]).toBe(
        x.data[
          flat(
            from,
            from.map((d, i) => (d === 1 ? 0 : idx[off + i]!)),
          )
        ],
      );
    }
  });

  test.each([
    [
      [2, 3],
      [1, 0],
    ],
    [
      [2, 3, 4],
      [2, 0, 1],
    ],
    [
      [1, 5],
      [1, 0],
    ],
    [
      [2, 2, 2],
      [0, 1, 2],
    ],
  ])("Transpose %j perm %j", (shape, perm) => {
    const x = t(shape);
    const out = evalOp("Transpose", [x], { perm });
    const outShape = perm.map((p) => shape[p]!);
    expect(out.shape).toEqual(outShape);
    for (const idx of indices(outShape)) {
      const src = new Array<number>(shape.length);
      perm.forEach((p, i) => (src[p] = idx[i]!));
      expect(out.data[flat(outShape, idx)]).toBe(x.data[flat(shape, src)]);
    }
  });

  test("Concat along each axis, including size-0 parts", () => {
    const a = t([2, 2]),
      b: T = { dtype: "f32", shape: [2, 1], data: [10, 20] },
      z: T = { dtype: "f32", shape: [2, 0], data: [] };
    expect([...evalOp("Concat", [a, b, z], { axis: 1 }).data]).toEqual([1, 2, 10, 3, 4, 20]);
    expect([...evalOp("Concat", [a, { dtype: "f32", shape: [1, 2], data: [7, 8] }], { axis: 0 }).data]).toEqual([
      1, 2, 3, 4, 7, 8,
    ]);
    expectCode(
      () =>
        typeOp(
          "Concat",
          [
            { dtype: "f32", shape: [2, 2] },
            { dtype: "f32", shape: [3, 1] },
          ],
          { axis: 1 },
        ),
      "shape-mismatch",
    );
    expectCode(() => typeOp("Concat", [{ dtype: "f32", shape: [2, 2] }], { axis: 2 }), "bad-axis");
  });

  test("Gather on axis 0 and 1 with multi-dim indices", () => {
    const x = t([4, 3]);
    const g0 = evalOp("Gather", [x, { dtype: "i32", shape: [2, 2], data: [3, 0, 1, 1] }], { axis: 0 });
    expect(g0.shape).toEqual([2, 2, 3]);
    expect([...g0.data]).toEqual([10, 11, 12, 1, 2, 3, 4, 5, 6, 4, 5, 6]);
    const g1 = evalOp("Gather", [x, { dtype: "i32", shape: [1], data: [2] }], { axis: 1 });
    expect(g1.shape).toEqual([4, 1]);
    expect([...g1.data]).toEqual([3, 6, 9, 12]);
    expectCode(() => evalOp("Gather", [x, { dtype: "i32", shape: [1], data: [4] }], { axis: 0 }), "index-out-of-range");
    expectCode(
      () =>
        typeOp(
          "Gather",
          [
            { dtype: "f32", shape: [4, 3] },
            { dtype: "f32", shape: [1] },
          ],
          { axis: 0 },
        ),
      "dtype-mismatch",
    );
  });

  test("DynamicSlice clamps starts into range", () => {
    const x = t([4, 3]);
    const s = (v: number): T => ({ dtype: "i32", shape: [], data: [v] });
    expect([...evalOp("DynamicSlice", [x, s(1), s(1)], { sizes: [2, 2] }).data]).toEqual([5, 6, 8, 9]);
    expect([...evalOp("DynamicSlice", [x, s(9), s(-3)], { sizes: [1, 2] }).data]).toEqual([10, 11]);
    expectCode(
      () =>
        typeOp(
          "DynamicSlice",
          [
            { dtype: "f32", shape: [4, 3] },
            { dtype: "i32", shape: [] },
          ],
          { sizes: [1, 1] },
        ),
      "bad-arity",
    );
  });

  test("DynamicUpdateSlice writes a KV row at a Pos slot", () => {
    const cache: T = { dtype: "f32", shape: [4, 2], data: new Array(8).fill(0) };
    const row: T = { dtype: "f32", shape: [1, 2], data: [7, 8] };
    const pos: T = { dtype: "i32", shape: [], data: [2] };
    const zero: T = { dtype: "i32", shape: [], data: [0] };
    expect([...evalOp("DynamicUpdateSlice", [cache, row, pos, zero]).data]).toEqual([0, 0, 0, 0, 7, 8, 0, 0]);
    expect([...evalOp("DynamicUpdateSlice", [cache, row, { ...pos, data: [10] }, zero]).data]).toEqual([
      0, 0, 0, 0, 0, 0, 7, 8,
    ]);
    expectCode(
      () =>
        typeOp("DynamicUpdateSlice", [
          { dtype: "f32", shape: [4, 2] },
          { dtype: "f32", shape: [1, 3] },
          { dtype: "i32", shape: [] },
          { dtype: "i32", shape: [] },
        ]),
      "shape-mismatch",
    );
    expectCode(
      () =>
        typeOp("DynamicUpdateSlice", [
          { dtype: "f32", shape: [4, 2] },
          { dtype: "f32", shape: [1, 2] },
          { dtype: "i32", shape: [1] },
          { dtype: "i32", shape: [] },
        ]),
      "shape-mismatch",
    );
  });

  test("param and axis errors", () => {
    expectCode(() => typeOp("Slice", [{ dtype: "f32", shape: [4] }], { start: [3], end: [2], step: [1] }), "bad-param");
    expectCode(() => typeOp("Transpose", [{ dtype: "f32", shape: [2, 3] }], { perm: [0, 0] }), "bad-axis");
    expectCode(() => typeOp("Broadcast", [{ dtype: "f32", shape: [3] }], { shape: [2, 2] }), "shape-mismatch");
  });
});

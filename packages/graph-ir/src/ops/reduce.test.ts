import { describe, expect, test } from "vitest";
import { evalOp, expectCode, flat, indices, rand, typeOp } from "../../test/util.js";

// Oracle: for each output index, loop over every input index and accumulate the matching ones.
function refReduce(
  kind: string,
  shape: number[],
  data: number[],
  axes: number[],
  keepdim: boolean,
): { shape: number[]; data: number[] } {
  const outShape = shape.flatMap((d, i) => (axes.includes(i) ? (keepdim ? [1] : []) : [d]));
  const out = indices(outShape).map((oidx) => {
    const kept = oidx;
    let acc = kind === "sum" ? 0 : kind === "max" || kind === "argmax" ? -Infinity : Infinity;
    let arg = 0,
      r = 0;
    for (const idx of indices(shape)) {
      // Does this input index project onto oidx?
      const proj = shape.flatMap((_, i) => (axes.includes(i) ? (keepdim ? [0] : []) : [idx[i]!]));
      if (proj.some((v, i) => v !== kept[i])) continue;
      const v = data[flat(shape, idx)]!;
      if (kind === "sum") acc += v;
      else if (kind === "min") acc = v < acc ? v : acc;
      else if (v > acc) {
        acc = v;
        arg = r;
      }
      r++;
    }
    return kind === "argmax" ? arg : acc;
  });
  return { shape: outShape, data: out };
}

const CASES: [number[], number[], boolean][] = [
  [[5], [0], false],
  [[5], [0], true],
  [[2, 3], [1], true],
  [[2, 3], [0], false],
  [[2, 3, 4], [0, 2], false],
  [[2, 3, 4], [1], true],
  [[1, 1], [0, 1], true],
  [[3, 1, 2], [1], false],
  [[4, 0], [1], false],
];

describe("Reduce against an index-projection oracle", () => {
  for (const kind of ["sum", "max", "min"] as const) {
    test.each(CASES)(`${kind} %j axes %j keepdim %s`, (shape, axes, keepdim) => {
      const data = rand(
        shape.reduce((a, b) => a * b, 1),
        5,
      );
      const want = refReduce(kind, shape, data, axes, keepdim);
      const out = evalOp("Reduce", [{ dtype: "f32", shape, data }], { kind, axes, keepdim });
      expect(out.shape).toEqual(want.shape);
      want.data.forEach((v, k) => expect(out.data[k]).toBe(Math.fround(v)));
    });
  }
  test.each(CASES.filter((c) => c[1].length === 1 && !c[0].includes(0)))(
    "argmax %j axis %j keepdim %s",
    (shape, axes, keepdim) => {
      const data = rand(
        shape.reduce((a, b) => a * b, 1),
        9,
      );
      const want = refReduce("argmax", shape, data, axes, keepdim);
      const out = evalOp("Reduce", [{ dtype: "f32", shape, data }], { kind: "argmax", axes, keepdim });
      expect(out.dtype).toBe("i32");
      expect([...out.data]).toEqual(want.data);
    },
  );
  test("argmax takes the first of ties; negative axes", () => {
    const out = evalOp("Reduce", [{ dtype: "f32", shape: [2, 3], data: [1, 3, 3, 5, 5, 0] }], {
      kind: "argmax",
      axes: [-1],
      keepdim: false,
    });
    expect([...out.data]).toEqual([1, 0]);
  });
  test("i32 sum", () => {
    expect([
      ...evalOp("Reduce", [{ dtype: "i32", shape: [3], data: [1, -5, 7] }], { kind: "sum", axes: [0], keepdim: false })
        .data,
    ]).toEqual([3]);
  });
  test("typing errors", () => {
    expectCode(
      () => typeOp("Reduce", [{ dtype: "f32", shape: [2, 3] }], { kind: "sum", axes: [2], keepdim: false }),
      "bad-axis",
    );
    expectCode(
      () => typeOp("Reduce", [{ dtype: "f32", shape: [2, 3] }], { kind: "sum", axes: [1, -1], keepdim: false }),
      "bad-axis",
    );
    expectCode(
      () => typeOp("Reduce", [{ dtype: "f32", shape: [2, 3] }], { kind: "argmax", axes: [0, 1], keepdim: false }),
      "bad-axis",
    );
    expectCode(
      () => typeOp("Reduce", [{ dtype: "f32", shape: [2, 3] }], { kind: "mean", axes: [0], keepdim: false }),
      "bad-param",
    );
    expectCode(
      () => typeOp("Reduce", [{ dtype: "bool", shape: [2] }], { kind: "sum", axes: [0], keepdim: false }),
      "dtype-mismatch",
    );
  });
});

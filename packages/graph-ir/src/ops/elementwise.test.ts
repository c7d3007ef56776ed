import { describe, expect, test } from "vitest";
import { evalOp, expectCode, flat, indices, rand, typeOp, type T } from "../../test/util.js";

// Oracle: numpy broadcasting written out with multi-indices.
function bcastRead(t: T, outIdx: number[]): number {
  const off = outIdx.length - t.shape.length;
  const idx = t.shape.map((d, i) => (d === 1 ? 0 : outIdx[off + i]!));
  return t.data[flat(t.shape, idx)]!;
}

const SHAPE_PAIRS: [number[], number[], number[]][] = [
  [[3], [3], [3]],
  [[2, 3], [3], [2, 3]],
  [
    [2, 1],
    [1, 4],
    [2, 4],
  ],
  [[1], [2, 3], [2, 3]],
  [[], [2, 2], [2, 2]],
  [
    [4, 1, 3],
    [2, 1],
    [4, 2, 3],
  ],
  [
    [1, 1],
    [1, 1],
    [1, 1],
  ],
  [[0, 3], [3], [0, 3]],
];

const FLOAT_BINARY: [string, (x: number, y: number) => number][] = [
  ["Add", (x, y) => x + y],
  ["Sub", (x, y) => x - y],
  ["Mul", (x, y) => x * y],
  ["Div", (x, y) => x / y],
  ["Max", (x, y) => (x > y ? x : y)],
  ["Min", (x, y) => (x < y ? x : y)],
  ["Pow", (x, y) => Math.exp(y * Math.log(x))],
];

describe("binary float ops against broadcasting loops", () => {
  for (const [op, f] of FLOAT_BINARY) {
    test.each(SHAPE_PAIRS)(`${op} %j x %j`, (sa, sb, so) => {
      expect(
        typeOp(op, [
          { dtype: "f32", shape: sa },
          { dtype: "f32", shape: sb },
        ]),
      ).toEqual({ dtype: "f32", shape: so });
      // Pow needs positive bases for the exp/log oracle.
      const a: T = {
        dtype: "f32",
        shape: sa,
        data: rand(
          sa.reduce((p, d) => p * d, 1),
          3,
        ).map((v) => (op === "Pow" ? Math.abs(v) + 0.5 : v)),
      };
      const b: T = {
        dtype: "f32",
        shape: sb,
        data: rand(
          sb.reduce((p, d) => p * d, 1),
          7,
        ).map((v) => Math.fround(op === "Div" ? v + 2 : v)),
      };
      const out = evalOp(op, [a, b]);
      expect(out.shape).toEqual(so);
      for (const idx of indices(so)) {
        const want = Math.fround(f(bcastRead(a, idx), bcastRead(b, idx)));
        const got = out.data[flat(so, idx)]!;
        if (op === "Pow") expect(got).toBeCloseTo(want, 6);
        else expect(got).toBe(want);
      }
    });
  }

  test("results are rounded to the storage dtype (bf16, f16)", () => {
    const out = evalOp("Add", [
      { dtype: "bf16", shape: [1], data: [1] },
      { dtype: "bf16", shape: [1], data: [2 ** -8] },
    ]);
    expect(out.data[0]).toBe(1); // 1 + 2^-8 is a tie in bf16, rounds to even.
    const h = evalOp("Mul", [
      { dtype: "f16", shape: [1], data: [300] },
      { dtype: "f16", shape: [1], data: [300] },
    ]);
    expect(h.data[0]).toBe(Infinity); // 90000 > f16 max 65504.
  });

  test("literal operands", () => {
    const out = evalOp("Sub", [
      { dtype: "f32", shape: [2], data: [1, 5] },
      { lit: 0.5, dtype: "f32" },
    ]);
    expect([...out.data]).toEqual([0.5, 4.5]);
  });
});

describe("integer and bit ops", () => {
  test("i32 arithmetic wraps and divides toward zero", () => {
    const a: T = { dtype: "i32", shape: [4], data: [2147483647, -7, 7, 65536] };
    const b: T = { dtype: "i32", shape: [4], data: [1, 2, -2, 65536] };
    expect([...evalOp("Add", [a, b]).data]).toEqual([-2147483648, -5, 5, 131072]);
    expect([...evalOp("Mul", [a, b]).data]).toEqual([2147483647, -14, -14, 0]);
    expect([...evalOp("Div", [a, b]).data]).toEqual([2147483647, -3, -3, 1]);
    expect([...evalOp("Div", [a, { lit: 0, dtype: "i32" }]).data]).toEqual([0, 0, 0, 0]);
  });
  test("shifts: arithmetic on i32, logical on u32", () => {
    expect([
      ...evalOp("Shr", [
        { dtype: "i32", shape: [2], data: [-16, 16] },
        { lit: 2, dtype: "i32" },
      ]).data,
    ]).toEqual([-4, 4]);
    expect([
      ...evalOp("Shr", [
        { dtype: "u32", shape: [1], data: [0xfffffff0] },
        { lit: 4, dtype: "u32" },
      ]).data,
    ]).toEqual([0x0fffffff]);
    expect([
      ...evalOp("Shl", [
        { dtype: "u32", shape: [1], data: [0x80000001] },
        { lit: 1, dtype: "u32" },
      ]).data,
    ]).toEqual([2]);
  });
  test("and/or/xor on i32 and bool, not", () => {
    const a: T = { dtype: "i32", shape: [2], data: [0b1100, -1] };
    const b: T = { dtype: "i32", shape: [2], data: [0b1010, 5] };
    expect([...evalOp("And", [a, b]).data]).toEqual([0b1000, 5]);
    expect([...evalOp("Or", [a, b]).data]).toEqual([0b1110, -1]);
    expect([...evalOp("Xor", [a, b]).data]).toEqual([0b0110, -6]);
    expect([...evalOp("Not", [a]).data]).toEqual([~0b1100, 0]);
    const p: T = { dtype: "bool", shape: [4], data: [0, 0, 1, 1] },
      q: T = { dtype: "bool", shape: [4], data: [0, 1, 0, 1] };
    expect([...evalOp("And", [p, q]).data]).toEqual([0, 0, 0, 1]);
    expect([...evalOp("Xor", [p, q]).data]).toEqual([0, 1, 1, 0]);
    expect([...evalOp("Not", [p]).data]).toEqual([1, 1, 0, 0]);
  });
  test("comparisons produce bool with broadcasting", () => {
    const a: T = { dtype: "f32", shape: [3, 1], data: [1, 2, 3] };
    const b: T = { dtype: "f32", shape: [2], data: [2, NaN] };
    const cases: [string, (x: number, y: number) => boolean][] = [
      ["Eq", (x, y) => x === y],
      ["Ne", (x, y) => x !== y],
      ["Lt", (x, y) => x < y],
      ["Le", (x, y) => x <= y],
      ["Gt", (x, y) => x > y],
      ["Ge", (x, y) => x >= y],
    ];
    for (const [op, f] of cases) {
      const out = evalOp(op, [a, b]);
      expect(out.dtype).toBe("bool");
      for (const idx of indices([3, 2]))
        expect(out.data[flat([3, 2], idx)]).toBe(f(bcastRead(a, idx), bcastRead(b, idx)) ? 1 : 0);
    }
  });
});

describe("unary, select, cast", () => {
  const xs = [-2.5, -1, -0.25, 0, 0.3, 1, 2.75];
  const ref: [string, (x: number) => number][] = [
    ["Neg", (x) => -x],
    ["Exp", (x) => Math.E ** x],
    ["Sqrt", (x) => x ** 0.5],
    ["Recip", (x) => 1 / x],
    ["Tanh", (x) => (Math.E ** (2 * x) - 1) / (Math.E ** (2 * x) + 1)],
    ["Sin", Math.sin],
    ["Cos", Math.cos],
    ["Abs", (x) => (x < 0 ? -x : x)],
    ["Log", (x) => Math.log(x)],
  ];
  for (const [op, f] of ref) {
    test(op, () => {
      const out = evalOp(op, [{ dtype: "f32", shape: [7], data: xs }]);
      xs.forEach((x, k) => {
        const want = Math.fround(f(Math.fround(x)));
        if (Number.isNaN(want)) expect(out.data[k]).toBeNaN();
        else expect(out.data[k]).toBeCloseTo(want, 6);
      });
    });
  }
  test("Erf against tabulated values", () => {
    const table: [number, number][] = [
      [0, 0],
      [0.5, 0.5204998778130465],
      [1, 0.8427007929497149],
      [-2, -0.9953222650189527],
      [3, 0.9999779095030014],
      [3.5, 0.9999992569016276],
      [0.01, 0.011283415555849618],
    ];
    const out = evalOp("Erf", [{ dtype: "f32", shape: [table.length], data: table.map((r) => r[0]) }]);
    table.forEach(([, want], k) => expect(out.data[k]).toBe(Math.fround(want)));
  });
  test("Select broadcasts cond, a, b", () => {
    const out = evalOp("Select", [
      { dtype: "bool", shape: [2, 1], data: [1, 0] },
      { dtype: "f32", shape: [3], data: [1, 2, 3] },
      { lit: -1, dtype: "f32" },
    ]);
    expect(out.shape).toEqual([2, 3]);
    expect([...out.data]).toEqual([1, 2, 3, -1, -1, -1]);
  });
  test("Cast truncates, saturates and maps NaN to 0", () => {
    const x: T = { dtype: "f32", shape: [6], data: [1.9, -1.9, 3e9, -3e9, NaN, 0] };
    expect([...evalOp("Cast", [x], { to: "i32" }).data]).toEqual([1, -1, 2147483647, -2147483648, 0, 0]);
    expect([...evalOp("Cast", [x], { to: "u8" }).data]).toEqual([1, 0, 255, 0, 0, 0]);
    expect([...evalOp("Cast", [x], { to: "bool" }).data]).toEqual([1, 1, 1, 1, 1, 0]);
    expect([...evalOp("Cast", [{ dtype: "f32", shape: [1], data: [1 + 2 ** -10] }], { to: "bf16" }).data]).toEqual([1]);
  });
});

describe("typing errors", () => {
  test("shape-mismatch on non-broadcastable shapes", () =>
    expectCode(
      () =>
        typeOp("Add", [
          { dtype: "f32", shape: [2, 3] },
          { dtype: "f32", shape: [2] },
        ]),
      "shape-mismatch",
    ));
  test("dtype-mismatch on mixed dtypes and bad families", () => {
    expectCode(
      () =>
        typeOp("Add", [
          { dtype: "f32", shape: [2] },
          { dtype: "i32", shape: [2] },
        ]),
      "dtype-mismatch",
    );
    expectCode(() => typeOp("Exp", [{ dtype: "i32", shape: [2] }]), "dtype-mismatch");
    expectCode(
      () =>
        typeOp("Shl", [
          { dtype: "f32", shape: [2] },
          { dtype: "f32", shape: [2] },
        ]),
      "dtype-mismatch",
    );
    expectCode(
      () =>
        typeOp("Select", [
          { dtype: "f32", shape: [2] },
          { dtype: "f32", shape: [2] },
          { dtype: "f32", shape: [2] },
        ]),
      "dtype-mismatch",
    );
  });
  test("bad-param on Cast to a non-dtype", () =>
    expectCode(() => typeOp("Cast", [{ dtype: "f32", shape: [] }], { to: "f64" }), "bad-param"));
});

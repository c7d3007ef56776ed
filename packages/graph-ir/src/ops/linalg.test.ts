import { describe, expect, test } from "vitest";
import { Builder, evaluate, type PackedFormat } from "@poot/graph-ir";
import { evalOp, expectCode, flat, indices, rand, typeOp } from "../../test/util.js";

describe("MatMul", () => {
  test.each([
    [
      [2, 3],
      [3, 4],
    ],
    [
      [1, 1],
      [1, 1],
    ],
    [
      [3, 2, 5],
      [5, 1],
    ],
    [
      [2, 1, 2, 3],
      [3, 3, 2],
    ],
    [
      [1, 4],
      [2, 4, 3],
    ],
  ])("%j @ %j against a triple loop", (sa, sb) => {
    const a = rand(
        sa.reduce((x, y) => x * y, 1),
        11,
      ),
      b = rand(
        sb.reduce((x, y) => x * y, 1),
        13,
      );
    const out = evalOp("MatMul", [
      { dtype: "f32", shape: sa, data: a },
      { dtype: "f32", shape: sb, data: b },
    ]);
    const m = sa[sa.length - 2]!,
      k = sa[sa.length - 1]!,
      n = sb[sb.length - 1]!;
    const ba = sa.slice(0, -2),
      bb = sb.slice(0, -2);
    const r = Math.max(ba.length, bb.length);
    const batch = Array.from({ length: r }, (_, i) => Math.max(ba[ba.length - r + i] ?? 1, bb[bb.length - r + i] ?? 1));
    expect(out.shape).toEqual([...batch, m, n]);
    for (const bi of indices(batch)) {
      const pick = (s: number[]): number[] => s.map((d, i) => (d === 1 ? 0 : bi[r - s.length + i]!));
      for (let i = 0; i < m; i++)
        for (let j = 0; j < n; j++) {
          let acc = 0;
          for (let kk = 0; kk < k; kk++) acc += a[flat(sa, [...pick(ba), i, kk])]! * b[flat(sb, [...pick(bb), kk, j])]!;
          expect(out.data[flat([...batch, m, n], [...bi, i, j])]).toBe(Math.fround(acc));
        }
    }
  });
  test("typing errors", () => {
    expectCode(
      () =>
        typeOp("MatMul", [
          { dtype: "f32", shape: [2, 3] },
          { dtype: "f32", shape: [4, 2] },
        ]),
      "shape-mismatch",
    );
    expectCode(
      () =>
        typeOp("MatMul", [
          { dtype: "f32", shape: [3] },
          { dtype: "f32", shape: [3, 2] },
        ]),
      "shape-mismatch",
    );
    expectCode(
      () =>
        typeOp("MatMul", [
          { dtype: "f32", shape: [2, 2, 3] },
          { dtype: "f32", shape: [3, 3, 2] },
        ]),
      "shape-mismatch",
    );
    expectCode(
      () =>
        typeOp("MatMul", [
          { dtype: "f32", shape: [2, 3] },
          { dtype: "bf16", shape: [3, 2] },
        ]),
      "dtype-mismatch",
    );
  });
});

describe("Iota", () => {
  test("counts along the axis", () => {
    expect([...evalOp("Iota", [], { shape: [2, 3], axis: 1, dtype: "i32" }).data]).toEqual([0, 1, 2, 0, 1, 2]);
    expect([...evalOp("Iota", [], { shape: [2, 3], axis: 0, dtype: "f32" }).data]).toEqual([0, 0, 0, 1, 1, 1]);
    expectCode(() => typeOp("Iota", [], { shape: [2], axis: 1, dtype: "i32" }), "bad-axis");
    expectCode(() => typeOp("Iota", [], { shape: [2], axis: 0, dtype: "bool" }), "bad-param");
  });
});

// A 4-element toy format: u8 offset byte, then 4 u8 quants scaled by 1/16: x_i = (q_i - off) / 16.
const TOY: PackedFormat = {
  name: "toy4",
  blockSize: 4,
  bytesPerBlock: 5,
  decode: {
    op: "div",
    a: {
      op: "sub",
      a: { op: "load", type: "u8", offset: { op: "add", a: { op: "const", value: 1 }, b: { op: "i" } } },
      b: { op: "load", type: "u8", offset: { op: "const", value: 0 } },
    },
    b: { op: "const", value: 16 },
  },
};

describe("packed weights", () => {
  // 3 rows x 8 cols = 2 blocks per row; row r block c has offset r+c and quants 10*c + i + r.
  const bytes = new Uint8Array(3 * 2 * 5);
  const want: number[] = [];
  for (let r = 0; r < 3; r++)
    for (let c = 0; c < 2; c++) {
      const at = (r * 2 + c) * 5;
      bytes[at] = r + c;
      for (let i = 0; i < 4; i++) {
        bytes[at + 1 + i] = 10 * c + i + r;
        want.push((10 * c + i + r - (r + c)) / 16);
      }
    }
  test("DecodePacked decodes every block; Gather moves whole packed rows", () => {
    const b = new Builder();
    const w = b.const("w", { packed: TOY }, [3, 8]);
    const ids = b.slot("Token", "ids", "i32", [2]);
    b.output("dense", b.decodePacked(w));
    b.output("rows", b.decodePacked(b.gather(w, ids, 0)));
    const r = evaluate(b.build(), { consts: { w: bytes }, slots: { ids: [2, 0] } });
    expect([...r.outputs.dense!.data]).toEqual(want);
    expect([...r.outputs.rows!.data]).toEqual([...want.slice(16, 24), ...want.slice(0, 8)]);
  });
  test("packed typing rules", () => {
    expectCode(() => typeOp("DecodePacked", [{ dtype: "f32", shape: [4] }]), "dtype-mismatch");
    expectCode(() => typeOp("DecodePacked", [{ dtype: { packed: TOY }, shape: [2, 6] }]), "shape-mismatch");
    expectCode(
      () =>
        typeOp(
          "Gather",
          [
            { dtype: { packed: TOY }, shape: [2, 8] },
            { dtype: "i32", shape: [1] },
          ],
          { axis: 1 },
        ),
      "bad-axis",
    );
    expectCode(
      () => typeOp("Transpose", [{ dtype: { packed: TOY }, shape: [2, 8] }], { perm: [1, 0] }),
      "dtype-mismatch",
    );
  });
});

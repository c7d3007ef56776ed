// The one movement generator for every movement op, in the interpreter, against graph-ir's movement primitives
// evaluated by the oracle: dense dtypes (f32, bf16, f16, i32, u32, u8, bool) and packed rows (Q4_0, Q8_0) moved as bytes or words.

import { Builder, evaluate, f32ToF16Bits } from "@poot/graph-ir";
import type { DType, Ref } from "@poot/graph-ir";
import { describe, expect, it } from "vitest";
import { synthesizeMovement } from "@poot/kernelgen";
import type { MovementOp, MovementRequest, SynthCaps } from "@poot/kernelgen";
import { Q4_0, Q8_0, fromWords, randomBlocks, toWords } from "./formats.js";
import { expectExact, poisoned, randBf16, randF32, rng, run } from "./helpers.js";

const CAPS: SynthCaps = { maxWorkgroup: 64, sharedBytes: 0 };

type Dense = "f32" | "bf16" | "f16" | "i32" | "u32" | "u8" | "bool";

function denseData(
  r: () => number,
  dt: Dense,
  n: number,
): Float32Array | Uint16Array | Int32Array | Uint32Array | Uint8Array {
  switch (dt) {
    case "f32":
      return randF32(r, n);
    case "bf16":
      return randBf16(r, n);
    case "f16":
      return Uint16Array.from({ length: n }, () => f32ToF16Bits(r() * 2 - 1));
    case "i32":
      return Int32Array.from({ length: n }, () => Math.floor(r() * 2000) - 1000);
    case "u32":
      return Uint32Array.from({ length: n }, () => Math.floor(r() * 2 ** 32));
    case "u8":
      return Uint8Array.from({ length: n }, () => Math.floor(r() * 256));
    case "bool":
      return Uint8Array.from({ length: n }, () => (r() < 0.5 ? 1 : 0));
  }
}

/** Runs `op` through the synthesizer and through graph-ir, comparing outputs exactly (movement never rounds). */
function check(
  dt: Dense,
  shape: number[],
  op: MovementOp,
  graphOp: (g: Builder, inputs: Ref[], extra: Ref[]) => Ref,
  extra: Record<string, Int32Array> = {},
  seed = 1,
) {
  const r = rng(seed);
  const inputShapes =
    op.op === "concat"
      ? op.shapes.map((s) => [...s])
      : op.op === "dynamicUpdateSlice"
        ? [shape, [...op.updateShape]]
        : [shape];
  const names =
    op.op === "concat" ? inputShapes.map((_, i) => `x${i}`) : op.op === "dynamicUpdateSlice" ? ["x", "update"] : ["x"];
  const data = inputShapes.map((s) =>
    denseData(
      r,
      dt,
      s.reduce((a, b) => a * b, 1),
    ),
  );
  const s = synthesizeMovement({ name: `mv_${op.op}`, dtype: dt, shape, op }, CAPS);
  const g = new Builder();
  const refs = inputShapes.map((sh, i) => g.const(names[i]!, dt as DType, sh));
  const extraRefs = Object.entries(extra)
    .map(([k, v]) =>
      k === "starts"
        ? Array.from(v, (_, j) => g.computed("i32", [], Int32Array.of(v[j]!)))
        : [g.const(k, "i32", op.op === "gather" ? [...op.indicesShape] : [v.length])],
    )
    .flat();
  const y = graphOp(g, refs, extraRefs);
  g.output("y", y);
  const consts: Record<string, ArrayLike<number>> = { ...extra };
  names.forEach((n, i) => (consts[n] = data[i]!));
  const want = evaluate(g.build(), { consts }).outputs.y!;
  const n = want.shape.reduce((a, b) => a * b, 1);
  const out = poisoned(s.kernel, "out", n);
  const buffers: Record<string, ArrayLike<number>> = { ...extra, out };
  names.forEach((nm, i) => (buffers[nm] = data[i]!));
  run(s.kernel, { grid: [...s.grid], buffers: buffers as never });
  const expected =
    dt === "bf16"
      ? Array.from(want.data, (v) => new Uint32Array(new Float32Array([v]).buffer)[0]! >>> 16)
      : dt === "f16"
        ? Array.from(want.data, f32ToF16Bits)
        : Array.from(want.data);
  expectExact(Array.from(out as ArrayLike<number>), expected);
}

describe("synthesized movement (dense)", () => {
  for (const dt of ["f32", "bf16", "f16", "i32", "u32", "u8", "bool"] as const) {
    it(`${dt}: reshape, slice with steps, broadcast, transpose`, () => {
      check(dt, [2, 3, 4], { op: "reshape", shape: [4, 6] }, (g, [x]) => g.reshape(x!, [4, 6]));
      check(dt, [5, 7], { op: "slice", start: [1, 0], end: [5, 7], step: [2, 3] }, (g, [x]) =>
        g.slice(x!, [1, 0], [5, 7], [2, 3]),
      );
      check(dt, [3, 1], { op: "broadcast", shape: [2, 3, 5] }, (g, [x]) => g.broadcast(x!, [2, 3, 5]));
      check(dt, [2, 3, 4], { op: "transpose", perm: [2, 0, 1] }, (g, [x]) => g.transpose(x!, [2, 0, 1]));
      check(dt, [1], { op: "reshape", shape: [1, 1] }, (g, [x]) => g.reshape(x!, [1, 1]));
    });
  }

  it("concat along each axis, including a one-wide input", () => {
    check(
      "f32",
      [2, 3],
      {
        op: "concat",
        axis: 1,
        shapes: [
          [2, 3],
          [2, 1],
          [2, 4],
        ],
      },
      (g, xs) => g.concat(xs, 1),
    );
    check(
      "i32",
      [2, 3],
      {
        op: "concat",
        axis: 0,
        shapes: [
          [2, 3],
          [5, 3],
        ],
      },
      (g, xs) => g.concat(xs, 0),
    );
  });

  it("gather along axis 0 and 1 with 2-D indices (out-of-range ids are clamped)", () => {
    check("f32", [6, 4], { op: "gather", axis: 0, indicesShape: [2, 2] }, (g, [x], [ids]) => g.gather(x!, ids!, 0), {
      indices: Int32Array.from([5, 0, 3, 3]),
    });
    check("bf16", [3, 5, 2], { op: "gather", axis: 1, indicesShape: [3] }, (g, [x], [ids]) => g.gather(x!, ids!, 1), {
      indices: Int32Array.from([4, 0, 2]),
    });
    // Clamping: graph-ir rejects out-of-range ids, so compare against the clamped ids.
    const s = synthesizeMovement(
      { name: "g", dtype: "f32", shape: [3, 2], op: { op: "gather", axis: 0, indicesShape: [2] } },
      CAPS,
    );
    const out = poisoned(s.kernel, "out", 4);
    run(s.kernel, {
      grid: [...s.grid],
      buffers: { x: Float32Array.from([0, 1, 2, 3, 4, 5]), indices: Int32Array.from([-4, 9]), out },
    });
    expectExact(out as Float32Array, [0, 1, 4, 5]);
  });

  it("dynamic slice and dynamic update slice at runtime starts, clamped like graph-ir", () => {
    for (const starts of [
      [1, 2],
      [0, 0],
      [7, -3],
    ]) {
      check("f32", [4, 6], { op: "dynamicSlice", sizes: [2, 3] }, (g, [x], st) => g.dynamicSlice(x!, st, [2, 3]), {
        starts: Int32Array.from(starts),
      });
      check(
        "i32",
        [4, 6],
        { op: "dynamicUpdateSlice", updateShape: [3, 2] },
        (g, [x, u], st) => g.dynamicUpdateSlice(x!, u!, st),
        { starts: Int32Array.from(starts) },
      );
    }
  });
});

describe("synthesized movement (packed rows)", () => {
  // D = 32: rows of 18 / 34 bytes, moved as bytes; D = 64: rows of 36 / 68 bytes (whole words), moved as words,
  // and gathered a slice per thread where threads run serially (the CPU); D = 256: rows of 144 / 272 bytes (whole
  // 16-byte units), gathered as vec4<u32> where the serial target has SIMD loads.
  const cases = [Q4_0, Q8_0].flatMap((f) =>
    [32, 64, 256].flatMap((D) => [false, true].map((serial) => ({ f, D, serial }))),
  );
  for (const { f, D, serial } of cases) {
    const CAPS: SynthCaps = {
      maxWorkgroup: 64,
      sharedBytes: 0,
      ...(serial ? { serialThreads: true, simdLoads: true } : {}),
    };
    it(`${f.name}, rows of ${D}${serial ? ", serial threads" : ""}: gather, slice, concat, update rows — byte-exact`, () => {
      const r = rng(f.bytesPerBlock + D);
      const V = 5;
      const rowBytes = (D / 32) * f.bytesPerBlock;
      const table = randomBlocks(r, f, (V * D) / 32);
      const dt = { packed: f };
      const runOp = (req: MovementRequest, buffers: Record<string, ArrayLike<number>>, outRows: number) => {
        const s = synthesizeMovement(req, CAPS);
        const out = poisoned(s.kernel, "out", Math.ceil((outRows * rowBytes) / 4));
        run(s.kernel, { grid: [...s.grid], buffers: { ...buffers, out } as never });
        return fromWords(out as Uint32Array, outRows * rowBytes);
      };
      const ids = Int32Array.from([3, 0, 3]);
      const got = runOp(
        { name: "pg", dtype: dt, shape: [V, D], op: { op: "gather", axis: 0, indicesShape: [3] } },
        { x: toWords(table), indices: ids },
        3,
      );
      // The same table as [1, V, D] gathered along axis 1 (a leading axis kept).
      const mid = runOp(
        { name: "pm", dtype: dt, shape: [1, V, D], op: { op: "gather", axis: 1, indicesShape: [3] } },
        { x: toWords(table), indices: ids },
        3,
      );
      const g = new Builder();
      const t = g.const("t", dt, [V, D]);
      g.output("rows", g.gather(t, g.const("ids", "i32", [3]), 0));
      g.output("re", g.reshape(t, [V, 1, D]));
      const o = evaluate(g.build(), { consts: { t: table, ids } }).outputs;
      expectExact(got, o.rows!.data);
      expectExact(mid, o.rows!.data);
      expectExact(
        runOp(
          { name: "pr", dtype: dt, shape: [V, D], op: { op: "reshape", shape: [V, 1, D] } },
          { x: toWords(table) },
          V,
        ),
        o.re!.data,
      );
      // graph-ir moves packed data only by Reshape and Gather; slice, concat and dynamic update of whole rows are
      // byte copies of rows by definition, so the reference is the rows' bytes.
      expectExact(
        runOp(
          { name: "ps", dtype: dt, shape: [V, D], op: { op: "slice", start: [1, 0], end: [4, D] } },
          { x: toWords(table) },
          3,
        ),
        table.slice(rowBytes, 4 * rowBytes),
      );
      const two = runOp(
        {
          name: "pc",
          dtype: dt,
          shape: [V, D],
          op: {
            op: "concat",
            axis: 0,
            shapes: [
              [V, D],
              [1, D],
            ],
          },
        },
        { x0: toWords(table), x1: toWords(table.slice(0, rowBytes)) },
        V + 1,
      );
      expectExact(two, [...table, ...table.slice(0, rowBytes)]);
      const upd = runOp(
        { name: "pu", dtype: dt, shape: [V, D], op: { op: "dynamicUpdateSlice", updateShape: [1, D] } },
        { x: toWords(table), update: toWords(table.slice(rowBytes, 2 * rowBytes)), starts: Int32Array.from([4, 0]) },
        V,
      );
      expectExact(upd, [...table.slice(0, 4 * rowBytes), ...table.slice(rowBytes, 2 * rowBytes)]);
    });
  }

  it("refuses packed ops that split rows", () => {
    expect(() =>
      synthesizeMovement(
        { name: "x", dtype: { packed: Q8_0 }, shape: [2, 64], op: { op: "transpose", perm: [1, 0] } },
        CAPS,
      ),
    ).toThrow(expect.objectContaining({ code: "bad_shape" }));
    expect(() =>
      synthesizeMovement(
        { name: "x", dtype: { packed: Q8_0 }, shape: [2, 64], op: { op: "slice", start: [0, 0], end: [2, 32] } },
        CAPS,
      ),
    ).toThrow(expect.objectContaining({ code: "bad_shape" }));
  });
});

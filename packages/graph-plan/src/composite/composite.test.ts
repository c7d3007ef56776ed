// Composite ops against hand-written float64 loops from their definitions (not against the fusion
// that produces them), plus their typing rules' refusals.

import { describe, expect, test } from "vitest";
import { Builder, GraphError, evaluate, type HostData, type Params, type Ref } from "@poot/graph-ir";
import { PLAN_OPS } from "./table.js";

function rnd(n: number, seed: number): number[] {
  let s = seed;
  return Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return Math.fround((s / 2147483648) * 2 - 1);
  });
}

/** Emits one composite over Const inputs and evaluates it. */
function run(
  op: string,
  inputs: { dtype: "f32" | "i32" | "bf16"; shape: number[]; data: HostData }[],
  params: Params,
): Float64Array | Int32Array {
  const b = new Builder({ ops: PLAN_OPS });
  const consts: Record<string, HostData> = {};
  const refs: Ref[] = inputs.map((t, k) => {
    consts[`in${k}`] = t.data;
    return b.const(`in${k}`, t.dtype, t.shape);
  });
  b.output("y", b.emit(op, refs, params));
  return evaluate(b.build(), { consts }, { ops: PLAN_OPS }).outputs.y!.data as Float64Array;
}

const close = (got: ArrayLike<number>, want: ArrayLike<number>, tol: number): void => {
  expect(got.length).toBe(want.length);
  let m = 0,
    num = 0;
  for (let i = 0; i < want.length; i++) {
    m = Math.max(m, Math.abs(want[i]!));
    num = Math.max(num, Math.abs(got[i]! - want[i]!));
  }
  expect(num / m).toBeLessThanOrEqual(tol);
};

describe("reference semantics against float64 loops", () => {
  test("Rope: x*cos + rotate_half(x)*sin with cos/sin broadcast over heads", () => {
    const H = 3,
      T = 2,
      D = 6,
      x = rnd(H * T * D, 1),
      c = rnd(T * D, 2),
      s = rnd(T * D, 3);
    const got = run(
      "Rope",
      [
        { dtype: "f32", shape: [H, T, D], data: x },
        { dtype: "f32", shape: [T, D], data: c },
        { dtype: "f32", shape: [T, D], data: s },
      ],
      { style: "half", dtype: "f32" },
    );
    const want: number[] = [];
    for (let h = 0; h < H; h++)
      for (let t = 0; t < T; t++)
        for (let j = 0; j < D; j++) {
          const xi = (k: number): number => x[(h * T + t) * D + k]!;
          const rot = j < D / 2 ? -xi(j + D / 2) : xi(j - D / 2);
          want.push(xi(j) * c[t * D + j]! + rot * s[t * D + j]!);
        }
    close(got, want, 1e-6);
  });

  test("Rope interleaved: GPT-J pairs (2i, 2i+1), out[2i] = x[2i]c - x[2i+1]s, out[2i+1] = x[2i+1]c + x[2i]s", () => {
    const H = 3,
      T = 2,
      D = 6,
      x = rnd(H * T * D, 11),
      c = rnd(T * D, 12),
      s = rnd(T * D, 13);
    const got = run(
      "Rope",
      [
        { dtype: "f32", shape: [H, T, D], data: x },
        { dtype: "f32", shape: [T, D], data: c },
        { dtype: "f32", shape: [T, D], data: s },
      ],
      { style: "interleaved", dtype: "f32" },
    );
    const want: number[] = [];
    for (let h = 0; h < H; h++)
      for (let t = 0; t < T; t++)
        for (let i = 0; i < D / 2; i++) {
          const at = (h * T + t) * D + 2 * i,
            ct = t * D + 2 * i;
          const x0 = x[at]!,
            x1 = x[at + 1]!;
          want.push(x0 * c[ct]! - x1 * s[ct]!, x1 * c[ct + 1]! + x0 * s[ct + 1]!);
        }
    close(got, want, 1e-6);
  });

  test("Attention: causal GQA with a position bound, scale and soft-cap", () => {
    const H = 4,
      KV = 2,
      Tq = 3,
      Tk = 5,
      D = 4,
      pos = 1,
      scale = 0.5,
      cap = 2;
    const q = rnd(H * Tq * D, 4),
      k = rnd(KV * Tk * D, 5),
      v = rnd(KV * Tk * D, 6);
    const got = run(
      "Attention",
      [
        { dtype: "f32", shape: [1, H, Tq, D], data: q },
        { dtype: "f32", shape: [1, KV, Tk, D], data: k },
        { dtype: "f32", shape: [1, KV, Tk, D], data: v },
        { dtype: "i32", shape: [1, 1, Tq, 1], data: [pos, pos + 1, pos + 2] },
      ],
      { scale, softCap: cap, mask: "causal", maskApply: "select", window: 0, groups: 2 },
    );
    const want: number[] = [];
    for (let h = 0; h < H; h++)
      for (let i = 0; i < Tq; i++) {
        const kv = Math.floor(h / 2);
        const w: number[] = [];
        for (let j = 0; j < Tk; j++) {
          let dot = 0;
          for (let c = 0; c < D; c++) dot += q[(h * Tq + i) * D + c]! * k[(kv * Tk + j) * D + c]!;
          w.push(j <= pos + i ? Math.exp(Math.tanh((dot * scale) / cap) * cap) : 0);
        }
        const z = w.reduce((a, b) => a + b, 0);
        for (let c = 0; c < D; c++) want.push(w.reduce((a, wj, j) => a + (wj / z) * v[(kv * Tk + j) * D + c]!, 0));
      }
    close(got, want, 1e-5);
  });

  test("two-stage ArgMax equals the first maximal index, with ties and NaN", () => {
    const rows = [
      [1, 5, 5, 2, 5, 0, 3],
      [0, 0, 0, 0, 0, 0, 0],
      [1, 2, NaN, 9, NaN, 3, 4],
      [-Infinity, -Infinity, -1, -1, -Infinity, -1, -2],
    ];
    for (const row of rows) {
      const cand = run("ArgMaxChunk", [{ dtype: "f32", shape: [row.length], data: row }], { chunk: 3 });
      const b = new Builder({ ops: PLAN_OPS });
      const x = b.const("x", "f32", [row.length]);
      b.output("y", b.emit("ArgMaxCombine", [x, b.emit("ArgMaxChunk", [x], { chunk: 3 })]));
      const best = evaluate(b.build(), { consts: { x: row } }, { ops: PLAN_OPS }).outputs.y!.data[0];
      let want = 0;
      for (let i = 1; i < row.length; i++)
        if (Number.isNaN(row[i]!) ? !Number.isNaN(row[want]!) : row[i]! > row[want]!) want = i;
      expect(best).toBe(want);
      expect(cand.length).toBe(Math.ceil(row.length / 3));
    }
  });

  test("IndexedMatMul: each token times its selected experts, gate weighting as the epilogue", () => {
    const T = 2,
      K = 5,
      E = 3,
      N = 4,
      S = 2;
    const x = rnd(T * K, 7),
      w = rnd(E * N * K, 8),
      ids = [2, 0, 1, 2],
      gate = [0.25, 0.75, 0.5, 0.5];
    const epilogue = {
      nodes: [{ op: "Mul", args: [{ in: 0 }, { in: 1 }], params: {}, dtype: "f32", shape: [T, S, N] }],
      result: 0,
    };
    const got = run(
      "IndexedMatMul",
      [
        { dtype: "f32", shape: [T, K], data: x },
        { dtype: "f32", shape: [E, N, K], data: w },
        { dtype: "i32", shape: [T, S], data: ids },
        { dtype: "f32", shape: [T, S, 1], data: gate },
      ],
      { accDtype: "f32", epilogue },
    );
    const want: number[] = [];
    for (let t = 0; t < T; t++)
      for (let s = 0; s < S; s++)
        for (let n = 0; n < N; n++) {
          let acc = 0;
          for (let k = 0; k < K; k++) acc += x[t * K + k]! * w[(ids[t * S + s]! * N + n) * K + k]!;
          want.push(acc * gate[t * S + s]!);
        }
    close(got, want, 1e-6);
  });

  test("ContractionEpilogue reads a bf16 B transposed and widens it", () => {
    const M = 2,
      K = 3,
      N = 2,
      a = [1, 2, 3, -1, 0.5, 2],
      bBits = new Uint16Array([0x3f80, 0x4000, 0xc040, 0x3f00, 0x4040, 0xbf80]);
    const got = run(
      "ContractionEpilogue",
      [
        { dtype: "f32", shape: [M, K], data: a },
        { dtype: "bf16", shape: [N, K], data: bBits },
      ],
      { transposeB: true, accDtype: "f32", epilogue: null },
    );
    // bf16 bits: 1, 2, -3 / 0.5, 3, -1.
    expect(Array.from(got)).toEqual([1 + 4 - 9, 0.5 + 6 - 3, -1 + 1 - 6, -0.5 + 1.5 - 2]);
  });
});

describe("typing rules refuse bad composites", () => {
  const typeErr = (fn: () => void): string => {
    try {
      fn();
    } catch (e) {
      if (e instanceof GraphError) return e.code;
      throw e;
    }
    return "no error";
  };
  test.each([
    [
      "Attention heads that are not KV heads x groups",
      "Attention",
      [
        [1, 3, 1, 4],
        [1, 2, 5, 4],
        [1, 2, 5, 4],
      ],
      { scale: 1, softCap: null, mask: "none", maskApply: "select", window: 0, groups: 2 },
      "shape-mismatch",
    ],
    [
      "a contraction depth mismatch",
      "ContractionEpilogue",
      [
        [2, 3],
        [4, 2],
      ],
      { transposeB: true, accDtype: "f32", epilogue: null },
      "shape-mismatch",
    ],
    [
      "a Rope over an odd last dim",
      "Rope",
      [
        [2, 5],
        [2, 5],
        [2, 5],
      ],
      { style: "half", dtype: "f32" },
      "shape-mismatch",
    ],
    [
      "a FusedRow reducing a non-last axis",
      "FusedRow",
      [[3, 4]],
      {
        region: {
          nodes: [
            {
              op: "Reduce",
              args: [{ in: 0 }],
              params: { kind: "sum", axes: [0], keepdim: true },
              dtype: "f32",
              shape: [1, 4],
            },
          ],
          result: 0,
        },
      },
      "bad-param",
    ],
  ])("%s", (_n, op, shapes, params, code) => {
    const b = new Builder({ ops: PLAN_OPS });
    const refs = (shapes as number[][]).map((s, i) => b.const(`c${i}`, "f32", s));
    expect(typeErr(() => b.emit(op as string, refs, params as Params))).toBe(code);
  });
});

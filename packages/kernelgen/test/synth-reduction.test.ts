// Synthesized row reductions (RMSNorm, softmax, LayerNorm, plain sum/max rows) in the interpreter, with shared-
// memory trees and with subgroups, against graph-ir's Builder helpers evaluated in float64.

import { Builder, evaluate } from "@poot/graph-ir";
import type { Ref } from "@poot/graph-ir";
import { describe, expect, it } from "vitest";
import { synthesizeReductionRow } from "@poot/kernelgen";
import type { ExprNode, ReductionRowRequest, SynthCaps } from "@poot/kernelgen";
import { expectClose, poisoned, randBf16, randF32, rng, run } from "./helpers.js";

const TREE: SynthCaps = { maxWorkgroup: 64, sharedBytes: 16384 };
const SUBGROUPS: SynthCaps = { maxWorkgroup: 128, sharedBytes: 16384, subgroupSize: 16 };

const leaf = (name: string): ExprNode => ({ op: "leaf", name });
const f = (value: number): ExprNode => ({ op: "const", value, type: "f32" });

/** RMSNorm as a request: r0 = Σ x², y = x · 1/sqrt(r0/C + eps) · w. */
function rmsNormReq(rows: number, cols: number, xDtype: "f32" | "bf16", eps: number): ReductionRowRequest {
  return {
    name: "rmsnorm",
    rows,
    cols,
    inputs: [
      { name: "x", dtype: xDtype, kind: "row" },
      { name: "w", dtype: "f32", kind: "col" },
    ],
    nodes: [
      leaf("x"),
      { op: "binary", fn: "mul", a: 0, b: 0 }, // 1: x²
      leaf("r0"),
      f(cols),
      { op: "binary", fn: "div", a: 2, b: 3 },
      f(eps),
      { op: "binary", fn: "add", a: 4, b: 5 }, // 6: ms + eps
      { op: "unary", fn: "sqrt", a: 6 },
      { op: "unary", fn: "recip", a: 7 }, // 8: inv
      { op: "binary", fn: "mul", a: 0, b: 8 },
      leaf("w"),
      { op: "binary", fn: "mul", a: 9, b: 10 }, // 11: y
    ],
    reductions: [{ kind: "sum", node: 1 }],
    outputs: [
      { name: "y", dtype: "f32", node: 11, per: "element" },
      { name: "inv", dtype: "f32", node: 8, per: "row" },
    ],
  };
}

/** Softmax: r0 = max x, r1 = Σ exp(x - r0), y = exp(x - r0) / r1. */
const softmaxNodes: ExprNode[] = [
  leaf("x"),
  leaf("r0"),
  { op: "binary", fn: "sub", a: 0, b: 1 },
  { op: "unary", fn: "exp", a: 2 },
  leaf("r1"),
  { op: "binary", fn: "div", a: 3, b: 4 },
];

function runReq(req: ReductionRowRequest, caps: SynthCaps, data: Record<string, ArrayLike<number>>) {
  const s = synthesizeReductionRow(req, caps);
  const buffers: Record<string, ArrayLike<number>> = { ...data };
  for (const o of req.outputs)
    buffers[o.name] = poisoned(s.kernel, o.name, o.per === "row" ? req.rows : req.rows * req.cols);
  run(s.kernel, {
    grid: [...s.grid],
    buffers: buffers as never,
    ...(s.subgroupSize === undefined ? {} : { subgroupSize: s.subgroupSize }),
  });
  return { s, out: buffers };
}

function graph(fn: (b: Builder) => Record<string, Ref>, consts: Record<string, ArrayLike<number>>) {
  const b = new Builder();
  for (const [n, r] of Object.entries(fn(b))) b.output(n, r);
  return evaluate(b.build(), { consts }).outputs;
}

describe("synthesized row reductions", () => {
  for (const caps of [TREE, SUBGROUPS]) {
    const tag = caps.subgroupSize === undefined ? "shared tree" : "subgroups";
    for (const [rows, cols, dt] of [
      [1, 1, "f32"],
      [3, 33, "bf16"],
      [2, 300, "f32"],
      [5, 64, "bf16"],
    ] as const) {
      it(`RMSNorm ${rows}×${cols} ${dt} (${tag})`, () => {
        const r = rng(rows * 1000 + cols);
        const x = dt === "f32" ? randF32(r, rows * cols, 3) : randBf16(r, rows * cols);
        const w = randF32(r, cols);
        const { out } = runReq(rmsNormReq(rows, cols, dt, 1e-5), caps, { x, w });
        const ref = graph(
          (b) => ({ y: b.rmsNorm(b.const("x", dt, [rows, cols]), b.const("w", "f32", [cols]), 1e-5) }),
          { x, w },
        );
        expectClose(
          out.y!,
          ref.y!.data,
          Array.from(ref.y!.data, (v) => Math.abs(v)),
          2e-6,
          1e-7,
        );
      });

      it(`softmax ${rows}×${cols} (${tag}), plus the row max and sum as per-row outputs`, () => {
        const x = randF32(rng(cols * 7 + rows), rows * cols, 5);
        const req: ReductionRowRequest = {
          name: "softmax",
          rows,
          cols,
          inputs: [{ name: "x", dtype: "f32", kind: "row" }],
          nodes: softmaxNodes,
          reductions: [
            { kind: "max", node: 0 },
            { kind: "sum", node: 3 },
          ],
          outputs: [
            { name: "y", dtype: "f32", node: 5, per: "element" },
            { name: "m", dtype: "f32", node: 1, per: "row" },
          ],
        };
        const { out } = runReq(req, caps, { x });
        const ref = graph(
          (b) => {
            const xr = b.const("x", "f32", [rows, cols]);
            return { y: b.softmax(xr), m: b.reduce("max", xr, [1]) };
          },
          { x },
        );
        expectClose(out.y!, ref.y!.data, 1, 2e-6);
        expectClose(out.m!, ref.m!.data, 0, 0);
      });
    }

    it(`LayerNorm with a scalar-per-row input and bf16 output (${tag})`, () => {
      const rows = 3,
        cols = 50;
      const r = rng(77);
      const x = randF32(r, rows * cols, 2);
      const w = randF32(r, cols);
      const bias = randF32(r, cols);
      const req: ReductionRowRequest = {
        name: "layernorm",
        rows,
        cols,
        inputs: [
          { name: "x", dtype: "f32", kind: "row" },
          { name: "w", dtype: "f32", kind: "col" },
          { name: "bias", dtype: "f32", kind: "col" },
        ],
        nodes: [
          leaf("x"),
          leaf("r0"),
          f(cols),
          { op: "binary", fn: "div", a: 1, b: 2 },
          { op: "binary", fn: "sub", a: 0, b: 3 }, // 4: c
          { op: "binary", fn: "mul", a: 4, b: 4 },
          leaf("r1"),
          { op: "binary", fn: "div", a: 6, b: 2 },
          f(1e-5),
          { op: "binary", fn: "add", a: 7, b: 8 },
          { op: "unary", fn: "sqrt", a: 9 },
          { op: "unary", fn: "recip", a: 10 },
          { op: "binary", fn: "mul", a: 4, b: 11 },
          leaf("w"),
          { op: "binary", fn: "mul", a: 12, b: 13 },
          leaf("bias"),
          { op: "binary", fn: "add", a: 14, b: 15 },
        ],
        reductions: [
          { kind: "sum", node: 0 },
          { kind: "sum", node: 5 },
        ],
        outputs: [{ name: "y", dtype: "f32", node: 16, per: "element" }],
      };
      const { out } = runReq(req, caps, { x, w, bias });
      const ref = graph(
        (b) => ({
          y: b.layerNorm(
            b.const("x", "f32", [rows, cols]),
            b.const("w", "f32", [cols]),
            b.const("bias", "f32", [cols]),
            1e-5,
          ),
        }),
        { x, w, bias },
      );
      expectClose(out.y!, ref.y!.data, 1, 5e-6);
    });
  }

  it("uses subgroups only when the caps have them, and reports a planted missing barrier", () => {
    expect(
      synthesizeReductionRow(rmsNormReq(1, 64, "f32", 1e-5), SUBGROUPS).kernel.body.some((s) =>
        JSON.stringify(s).includes("reduce_add"),
      ),
    ).toBe(true);
    expect(JSON.stringify(synthesizeReductionRow(rmsNormReq(1, 64, "f32", 1e-5), TREE).kernel.body)).not.toContain(
      "reduce_add",
    );
    // Remove the first barrier of the tree reduction: the interpreter must report the race.
    const s = synthesizeReductionRow(rmsNormReq(2, 64, "f32", 1e-5), TREE);
    const body = [...s.kernel.body];
    const firstBarrier = body.findIndex((st) => st.s === "barrier");
    body.splice(firstBarrier, 1);
    const broken = { ...s.kernel, body };
    const x = randF32(rng(1), 128),
      w = randF32(rng(2), 64);
    expect(() =>
      run(broken, { grid: [2], buffers: { x, w, y: new Float32Array(128), inv: new Float32Array(2) } }),
    ).toThrow(expect.objectContaining({ code: "race" }));
  });
});

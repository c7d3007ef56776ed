// The storage cells the other synthesizer tests leave out: GEMV and tiled GEMM with bf16/f16 activations and f16/bf16
// outputs, a row reduction (RMSNorm) reading and writing f16, RoPE with 16-bit x/tables and f16 steps, and segmented
// IndexedMatMul with f32/f16 experts and 16-bit x/out, on tree, subgroup and CPU caps, in the interpreter against
// graph-ir's float64 evaluation of the primitive chain (rounded where it rounds).

import { Builder, bf16BitsToF32, evaluate, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from "@poot/graph-ir";
import type { Ref } from "@poot/graph-ir";
import { describe, it } from "vitest";
import {
  cpuSynthCaps,
  synthesizeGemm,
  synthesizeGemv,
  synthesizeIndexedMatMul,
  synthesizeReductionRow,
  synthesizeRope,
} from "@poot/kernelgen";
import type { SynthCaps } from "@poot/kernelgen";
import { expectClose, poisoned, randF32, rng, run } from "./helpers.js";

type Half = "f32" | "bf16" | "f16";
const CAPS: Record<string, SynthCaps> = {
  tree: { maxWorkgroup: 64, sharedBytes: 8192 },
  subgroups: { maxWorkgroup: 256, sharedBytes: 16384, subgroupSize: 32 },
  cpu: cpuSynthCaps(),
};

/** Values of `v` stored as `dt` (bits for the 16-bit types). */
const store = (v: Float32Array, dt: Half): Float32Array | Uint16Array =>
  dt === "f32" ? v : Uint16Array.from(v, dt === "bf16" ? f32ToBf16Bits : f32ToF16Bits);
/** f32 values of storage `a` of type `dt`. */
const widen = (a: ArrayLike<number>, dt: Half): number[] =>
  Array.from(a, (x) => (dt === "f32" ? x : dt === "bf16" ? bf16BitsToF32(x) : f16BitsToF32(x)));
/** One ulp of `dt` relative to the value, as a tolerance term (a rounding boundary crossed by f32 noise). */
const ulp = (dt: Half): number => (dt === "bf16" ? 2 ** -7 : dt === "f16" ? 2 ** -10 : 0);

/**
 * y = x @ W for x [M, K] stored as `xDt`, W [N, K] (nk) stored as `wDt`, y stored as `outDt`; checks `got` against the
 * oracle within 1e-5 of Σ|x·w| plus one ulp of the output type.
 */
function checkMatmul(
  got: ArrayLike<number>,
  x: Float32Array | Uint16Array,
  w: Float32Array | Uint16Array,
  M: number,
  K: number,
  N: number,
  xDt: Half,
  wDt: Half,
  outDt: Half,
): void {
  const g = new Builder();
  const xr = g.f32(g.const("x", xDt, [M, K]));
  const wr = g.transpose(g.f32(g.const("w", wDt, [N, K])), [1, 0]);
  const y = g.matmul(xr, wr);
  g.output("y", outDt === "f32" ? y : g.f32(g.cast(y, outDt)));
  g.output("s", g.matmul(g.unary("Abs", xr), g.unary("Abs", wr)));
  const o = evaluate(g.build(), { consts: { x, w } }).outputs;
  const want = o.y!.data;
  expectClose(
    widen(got, outDt),
    want,
    Array.from(
      o.s!.data,
      (s, i) => s + (ulp(outDt) * Math.abs(want[i]!)) / 1e-5 + (outDt === "f16" ? 2 ** -24 / 1e-5 : 0),
    ),
    1e-5,
  );
}

describe("GEMV with half-precision activations and outputs", () => {
  const cases: readonly (readonly [number, number, number, Half, Half, Half, string])[] = [
    [1, 70, 33, "bf16", "bf16", "f32", "subgroups"],
    [3, 40, 9, "f16", "f32", "f16", "tree"],
    [2, 64, 17, "bf16", "f16", "bf16", "cpu"],
    [1, 1, 1, "f16", "f16", "f16", "cpu"],
    [8, 33, 5, "f16", "bf16", "f32", "subgroups"],
  ];
  for (const [B, K, N, xDt, wDt, outDt, caps] of cases) {
    it(`B=${B} K=${K} N=${N}: x ${xDt}, W ${wDt}, y ${outDt} (${caps})`, () => {
      const r = rng(B * 1000 + K * 10 + N);
      const x = store(randF32(r, B * K), xDt),
        w = store(randF32(r, N * K), wDt);
      const s = synthesizeGemv(
        { name: "gemv_h", K, N, batch: B, xDtype: xDt, outDtype: outDt, weight: { dtype: wDt, layout: "nk" } },
        CAPS[caps]!,
      );
      const y = poisoned(s.kernel, "y", B * N);
      run(s.kernel, {
        grid: [...s.grid],
        buffers: { x, W: w, y },
        ...(s.subgroupSize === undefined ? {} : { subgroupSize: s.subgroupSize }),
      });
      checkMatmul(y as ArrayLike<number>, x, w, B, K, N, xDt, wDt, outDt);
    });
  }
});

describe("tiled GEMM with half-precision A and outputs", () => {
  const cases: readonly (readonly [number, number, number, Half, Half, Half, string])[] = [
    [17, 20, 33, "bf16", "bf16", "f16", "tree"],
    [9, 33, 5, "f16", "f32", "bf16", "subgroups"],
    [1, 1, 1, "f16", "f16", "f16", "tree"],
    [33, 18, 7, "bf16", "f16", "f32", "cpu"],
  ];
  for (const [M, K, N, aDt, wDt, outDt, caps] of cases) {
    it(`M=${M} K=${K} N=${N}: A ${aDt}, W ${wDt}, C ${outDt} (${caps})`, () => {
      const r = rng(M * 131 + K * 17 + N);
      const a = store(randF32(r, M * K), aDt),
        w = store(randF32(r, N * K), wDt);
      const s = synthesizeGemm(
        { name: "gemm_h", M, N, K, aDtype: aDt, outDtype: outDt, weight: { dtype: wDt, layout: "nk" } },
        CAPS[caps]!,
      );
      const C = poisoned(s.kernel, "C", M * N);
      run(s.kernel, { grid: [...s.grid], buffers: { A: a, W: w, C } });
      checkMatmul(C as ArrayLike<number>, a, w, M, K, N, aDt, wDt, outDt);
    });
  }
});

describe("row reduction reading and writing f16", () => {
  for (const [rows, cols, caps] of [
    [1, 1, "tree"],
    [3, 33, "subgroups"],
    [2, 300, "cpu"],
  ] as const) {
    it(`RMSNorm ${rows}×${cols}: x f16, w f16, y f16 (${caps})`, () => {
      const r = rng(rows * 7 + cols);
      const x = store(randF32(r, rows * cols), "f16") as Uint16Array,
        w = store(randF32(r, cols), "f16") as Uint16Array;
      const leaf = (name: string) => ({ op: "leaf", name }) as const;
      const s = synthesizeReductionRow(
        {
          name: "rms_h",
          rows,
          cols,
          inputs: [
            { name: "x", dtype: "f16", kind: "row" },
            { name: "w", dtype: "f16", kind: "col" },
          ],
          nodes: [
            leaf("x"),
            { op: "binary", fn: "mul", a: 0, b: 0 },
            leaf("r0"),
            { op: "const", value: cols, type: "f32" },
            { op: "binary", fn: "div", a: 2, b: 3 },
            { op: "const", value: 1e-5, type: "f32" },
            { op: "binary", fn: "add", a: 4, b: 5 },
            { op: "unary", fn: "sqrt", a: 6 },
            { op: "unary", fn: "recip", a: 7 },
            { op: "binary", fn: "mul", a: 0, b: 8 },
            leaf("w"),
            { op: "binary", fn: "mul", a: 9, b: 10 },
          ],
          reductions: [{ kind: "sum", node: 1 }],
          outputs: [{ name: "y", dtype: "f16", node: 11, per: "element" }],
        },
        CAPS[caps]!,
      );
      const y = poisoned(s.kernel, "y", rows * cols);
      run(s.kernel, {
        grid: [...s.grid],
        buffers: { x, w, y },
        ...(s.subgroupSize === undefined ? {} : { subgroupSize: s.subgroupSize }),
      });
      const g = new Builder();
      const norm: Ref = g.rmsNorm(g.const("x", "f16", [rows, cols]), g.const("w", "f16", [cols]), 1e-5);
      g.output("y", g.f32(g.cast(norm, "f16")));
      const want = evaluate(g.build(), { consts: { x, w } }).outputs.y!.data;
      // One f16 ulp (a boundary crossed by f32 noise in the sum of squares) plus f16's smallest subnormal.
      expectClose(
        widen(y as Uint16Array, "f16"),
        want,
        Array.from(want, (v) => Math.abs(v) * 2 ** -10 + 2 ** -24),
        1,
      );
    });
  }
});

describe("RoPE with 16-bit x and tables, f16 steps", () => {
  for (const [x16, t16, step, T, H, D] of [
    ["bf16", "f16", "f16", 3, 2, 8],
    ["f16", "bf16", "f32", 1, 1, 2],
    ["f16", "f16", "bf16", 2, 3, 6],
  ] as const) {
    it(`rotate-half, x ${x16}, cos/sin ${t16}, ${step} steps, x [${T}, ${H}, ${D}]`, () => {
      const r = rng(T * 100 + H * 10 + D);
      const x = store(randF32(r, T * H * D), x16),
        cos = store(randF32(r, T * D), t16),
        sin = store(randF32(r, T * D), t16);
      const s = synthesizeRope(
        {
          name: "rope_h",
          shape: [T, H, D],
          style: "half",
          xDtype: x16,
          dtype: step,
          cos: { dtype: t16, shape: [T, 1, D] },
          sin: { dtype: t16, shape: [T, 1, D] },
        },
        CAPS.tree!,
      );
      const out = poisoned(s.kernel, "out", T * H * D);
      run(s.kernel, { grid: [...s.grid], buffers: { x, cos, sin, out } });
      const g = new Builder();
      const xr = g.f32(g.const("x", x16, [T, H, D]));
      const c = g.f32(g.const("cos", t16, [T, 1, D])),
        sn = g.f32(g.const("sin", t16, [T, 1, D]));
      const rot = g.concat([g.neg(g.slice(xr, [0, 0, D / 2], [T, H, D])), g.slice(xr, [0, 0, 0], [T, H, D / 2])], 2);
      const round = (v: Ref): Ref => (step === "f32" ? v : g.f32(g.cast(v, step)));
      g.output("y", round(g.add(round(g.mul(xr, c)), round(g.mul(rot, sn)))));
      const want = evaluate(g.build(), { consts: { x, cos, sin } }).outputs.y!.data;
      // Each step rounds exactly where the chain rounds: the same values.
      expectClose(
        widen(out as ArrayLike<number>, step),
        want,
        Array.from(want, () => 0),
        1,
      );
    });
  }
});

describe("segmented IndexedMatMul with f32/f16 experts and 16-bit x and out", () => {
  for (const [xDt, wDt, outDt, caps] of [
    ["f32", "f32", "f32", "subgroups"],
    ["bf16", "f16", "f16", "tree"],
    ["f16", "f32", "bf16", "cpu"],
  ] as const) {
    it(`T=3 S=2 K=20 N=9 E=4: x ${xDt}, experts ${wDt}, out ${outDt} (${caps})`, () => {
      const [T, S, K, N, E] = [3, 2, 20, 9, 4];
      const r = rng(K * 3 + N + xDt.length + wDt.length * 7 + outDt.length * 13);
      const x = store(randF32(r, T * K), xDt),
        w = store(randF32(r, E * N * K), wDt);
      const ids = Int32Array.from({ length: T * S }, () => Math.floor(r() * E));
      const s = synthesizeIndexedMatMul(
        { name: "imm_h", T, S, K, N, experts: E, xDtype: xDt, wDtype: wDt, outDtype: outDt },
        CAPS[caps]!,
      );
      const out = poisoned(s.kernel, "out", T * S * N);
      run(s.kernel, {
        grid: [...s.grid],
        buffers: { x, w, ids, out },
        ...(s.subgroupSize === undefined ? {} : { subgroupSize: s.subgroupSize }),
      });
      const g = new Builder();
      const tok = Int32Array.from({ length: T * S }, (_, i) => Math.floor(i / S));
      const xs = g.reshape(g.gather(g.f32(g.const("x", xDt, [T, K])), g.const("tok", "i32", [T * S]), 0), [
        T * S,
        1,
        K,
      ]);
      const ws = g.transpose(
        g.f32(g.gather(g.const("w", wDt, [E, N, K]), g.const("ids", "i32", [T * S]), 0)),
        [0, 2, 1],
      );
      const y = g.reshape(g.matmul(xs, ws), [T, S, N]);
      g.output("y", outDt === "f32" ? y : g.f32(g.cast(y, outDt)));
      g.output("s", g.reshape(g.matmul(g.unary("Abs", xs), g.unary("Abs", ws)), [T, S, N]));
      const o = evaluate(g.build(), { consts: { x, w, ids, tok } }).outputs;
      const want = o.y!.data;
      expectClose(
        widen(out as ArrayLike<number>, outDt),
        want,
        Array.from(
          o.s!.data,
          (sv, i) => sv + (ulp(outDt) * Math.abs(want[i]!)) / 1e-5 + (outDt === "f16" ? 2 ** -24 / 1e-5 : 0),
        ),
        1e-5,
      );
    });
  }
});

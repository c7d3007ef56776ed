// The tensor-core GEMM (warps issuing m16n8k16 mma) in the interpreter against graph-ir's MatMul evaluated in
// float64, on ragged shapes (not multiples of the tile, one row, one column), batches, both weight layouts, bf16/f16
// weights with bf16/f16/f32 activations and an epilogue; outputs poisoned first. Tolerance, not bits: the
// hardware's summation order inside an mma is unspecified.

import { Builder, evaluate, f32ToBf16Bits, f32ToF16Bits } from "@poot/graph-ir";
import type { Ref } from "@poot/graph-ir";
import { describe, expect, it } from "vitest";
import { chooseMmaTiling, mmaGemmApplies, mmaShapeFor, synthesizeMmaGemm } from "@poot/kernelgen";
import type { SynthCaps } from "@poot/kernelgen";
import { expectClose, poisoned, randF32, rng, run } from "./helpers.js";

type Half = "bf16" | "f16";
type ADtype = "f32" | Half;

const TC: SynthCaps = {
  maxWorkgroup: 1024,
  sharedBytes: 49152,
  subgroupSize: 32,
  matrixShapes: [
    { m: 16, n: 8, k: 16, input: "f16" },
    { m: 16, n: 8, k: 16, input: "bf16" },
  ],
};

function randHalf(r: () => number, n: number, dt: Half): Uint16Array {
  const conv = dt === "bf16" ? f32ToBf16Bits : f32ToF16Bits;
  return Uint16Array.from({ length: n }, () => conv(r() * 2 - 1));
}

/** Oracle: x [B, M, K] @ W (layout, optionally batched) [+ bias, SiLU]; returns y and Σ|terms| for the tolerance. */
function oracle(
  B: number,
  M: number,
  K: number,
  N: number,
  x: ArrayLike<number>,
  aDtype: ADtype,
  w: ArrayLike<number>,
  wDtype: Half,
  layout: "nk" | "kn",
  batchedW: boolean,
  bias?: ArrayLike<number>,
) {
  const g = new Builder();
  const xr = g.const("x", aDtype, [B, M, K]);
  const xf = aDtype === "f32" ? xr : g.f32(xr);
  const wb0 = g.f32(
    g.const("w", wDtype, batchedW ? (layout === "nk" ? [B, N, K] : [B, K, N]) : layout === "nk" ? [N, K] : [K, N]),
  );
  const wkn = layout === "nk" ? g.transpose(wb0, batchedW ? [0, 2, 1] : [1, 0]) : wb0;
  const wb = batchedW ? wkn : g.broadcast(g.reshape(wkn, [1, K, N]), [B, K, N]);
  let y: Ref = g.matmul(xf, wb);
  if (bias !== undefined) y = g.silu(g.add(y, g.const("bias", "f32", [N])));
  g.output("y", y);
  g.output("s", g.matmul(g.unary("Abs", xf), g.unary("Abs", wb)));
  const o = evaluate(g.build(), { consts: { x, w, ...(bias === undefined ? {} : { bias }) } }).outputs;
  return { y: o.y!.data, s: o.s!.data };
}

/** AMD matrix cores (decision 2401): MFMA 16x16x16 on wave64 (gfx90a/gfx942), WMMA on wave32 (gfx1100). */
const MFMA: SynthCaps = {
  maxWorkgroup: 1024,
  sharedBytes: 65536,
  subgroupSize: 64,
  matrixShapes: [
    { m: 16, n: 16, k: 16, input: "f16", layout: "mfma" },
    { m: 16, n: 16, k: 16, input: "bf16", layout: "mfma" },
  ],
};
const WMMA: SynthCaps = {
  ...MFMA,
  subgroupSize: 32,
  matrixShapes: [
    { m: 16, n: 16, k: 16, input: "f16", layout: "wmma" },
    { m: 16, n: 16, k: 16, input: "bf16", layout: "wmma" },
  ],
};

describe.each([
  ["m16n8k16 mma (PTX)", TC, "m16n8k16"],
  ["MFMA 16x16x16 (AMD CDNA, 64 lanes)", MFMA, "m16n16k16_mfma"],
  ["WMMA-backed m16n8k16 (AMD RDNA3, 32 lanes)", WMMA, "m16n8k16_wmma"],
] as const)("synthesized tensor-core GEMM: %s", (_title, TC, shape) => {
  const cases: [number, number, number, number, ADtype, Half, "nk" | "kn", boolean][] = [
    [1, 1, 1, 1, "bf16", "bf16", "nk", false],
    [1, 17, 20, 33, "f32", "bf16", "nk", false],
    [1, 70, 24, 9, "f16", "f16", "kn", false],
    [2, 33, 18, 65, "f32", "bf16", "kn", false],
    [1, 1, 40, 70, "f32", "bf16", "nk", false],
    [1, 50, 37, 1, "bf16", "bf16", "kn", false],
    [2, 19, 16, 24, "f16", "f16", "nk", true],
  ];
  for (const [B, M, K, N, aDt, wDt, layout, batchedW] of cases) {
    it(`batch=${B} M=${M} K=${K} N=${N} A ${aDt} W ${wDt} ${layout}${batchedW ? " (batched W)" : ""}`, () => {
      const r = rng(M * 1000 + K * 10 + N + B);
      const a = aDt === "f32" ? randF32(r, B * M * K) : randHalf(r, B * M * K, aDt);
      const w = randHalf(r, (batchedW ? B : 1) * K * N, wDt);
      const s = synthesizeMmaGemm(
        { name: "gemm_mma", M, N, K, batch: B, batchedWeight: batchedW, aDtype: aDt, weight: { dtype: wDt, layout } },
        TC,
      );
      expect(s.kernel.body.length).toBeGreaterThan(0);
      expect(s.tiling.shape).toBe(shape);
      const C = poisoned(s.kernel, "C", B * M * N);
      run(s.kernel, { grid: [...s.grid], buffers: { A: a, W: w, C }, subgroupSize: s.subgroupSize ?? 0 });
      const ref = oracle(B, M, K, N, a, aDt, w, wDt, layout, batchedW);
      expectClose(C as Float32Array, ref.y, ref.s);
    });
  }

  it("with a bias + SiLU epilogue stored as bf16", () => {
    const [M, K, N] = [23, 35, 20];
    const r = rng(5);
    const a = randF32(r, M * K),
      w = randHalf(r, N * K, "bf16"),
      bias = randF32(r, N);
    const epilogue = {
      inputs: [{ name: "bias", dtype: "f32" as const, kind: "col" as const }],
      nodes: [
        { op: "leaf" as const, name: "acc" },
        { op: "leaf" as const, name: "bias" },
        { op: "binary" as const, fn: "add" as const, a: 0, b: 1 },
        { op: "unary" as const, fn: "neg" as const, a: 2 },
        { op: "unary" as const, fn: "exp" as const, a: 3 },
        { op: "const" as const, value: 1, type: "f32" as const },
        { op: "binary" as const, fn: "add" as const, a: 4, b: 5 },
        { op: "binary" as const, fn: "div" as const, a: 2, b: 6 },
      ],
      node: 7,
    };
    const s = synthesizeMmaGemm(
      { name: "gemm_mma_ep", M, N, K, weight: { dtype: "bf16", layout: "nk" }, outDtype: "bf16", epilogue },
      TC,
    );
    const C = poisoned(s.kernel, "C", M * N) as Uint16Array;
    run(s.kernel, { grid: [...s.grid], buffers: { A: a, W: w, bias, C }, subgroupSize: s.subgroupSize ?? 0 });
    const ref = oracle(1, M, K, N, a, "f32", w, "bf16", "nk", false, bias);
    const got = Array.from(C, (h) => new Float32Array(new Uint32Array([h << 16]).buffer)[0] as number);
    // bf16 storage: half an ulp of bf16 (2^-9 relative) on top of the f32 error.
    expectClose(
      got,
      ref.y,
      Array.from(ref.y, (v, i) => Math.abs(v) * 400 + (ref.s[i] as number) + 1),
    );
  });
});

describe("tensor-core GEMM selection and tiling", () => {
  it("is chosen only for bf16/f16 weights on caps with that matrix unit and an exact A path", () => {
    const req = (aDtype: ADtype, w: "bf16" | "f16" | "f32") => ({
      aDtype,
      weight: { dtype: w, layout: "nk" as const },
    });
    expect(mmaGemmApplies(req("f32", "bf16"), TC)).toBe(true);
    expect(mmaGemmApplies(req("f16", "f16"), TC)).toBe(true);
    expect(mmaGemmApplies(req("f32", "f16"), TC)).toBe(false); // f16 cannot split an f32 exactly
    expect(mmaGemmApplies(req("bf16", "f16"), TC)).toBe(false);
    expect(mmaGemmApplies(req("f32", "f32"), TC)).toBe(false);
    expect(mmaGemmApplies(req("f32", "bf16"), { ...TC, matrixShapes: [] })).toBe(false);
    expect(mmaGemmApplies(req("f32", "bf16"), { ...TC, matrixShapes: [{ m: 16, n: 16, k: 16, input: "bf16" }] })).toBe(
      false,
    );
    expect(mmaGemmApplies(req("f32", "bf16"), { ...TC, subgroupSize: 64 })).toBe(false);
    // AMD: MFMA needs wave64, WMMA wave32; a 16x16x16 unit without a layout (Vulkan's) is none this GEMM issues.
    expect(mmaShapeFor(MFMA, "bf16")).toBe("m16n16k16_mfma");
    expect(mmaShapeFor(WMMA, "f16")).toBe("m16n8k16_wmma");
    expect(mmaGemmApplies(req("f32", "bf16"), { ...MFMA, subgroupSize: 32 })).toBe(false);
    expect(mmaGemmApplies(req("f32", "bf16"), { ...WMMA, subgroupSize: 64 })).toBe(false);
    expect(mmaGemmApplies(req("f32", "f16"), MFMA)).toBe(false);
    expect(() =>
      synthesizeMmaGemm(
        { name: "g", M: 4, N: 4, K: 4, weight: { dtype: "bf16", layout: "nk" } },
        { ...TC, matrixShapes: [] },
      ),
    ).toThrow(expect.objectContaining({ code: "bad_param" }));
  });

  it("sizes warps and tiles from the shape", () => {
    expect(chooseMmaTiling(1, 1, "direct", TC)).toMatchObject({
      warpsM: 1,
      warpsN: 1,
      tilesM: 1,
      tilesN: 1,
      BM: 16,
      BN: 8,
    });
    expect(chooseMmaTiling(512, 4096, "split3", TC)).toMatchObject({
      warpsM: 2,
      warpsN: 2,
      tilesM: 2,
      tilesN: 4,
      BM: 64,
      BN: 64,
    });
    // MFMA: 64-lane subgroups, n16 tiles: a 64×128 output tile from 4 subgroups of 64.
    expect(chooseMmaTiling(512, 4096, "split3", MFMA, "m16n16k16_mfma")).toMatchObject({
      warpsM: 2,
      warpsN: 2,
      tilesN: 4,
      BM: 64,
      BN: 128,
    });
    expect(() => chooseMmaTiling(512, 4096, "split3", { ...TC, sharedBytes: 1024 })).toThrow(
      expect.objectContaining({ code: "exceeds_caps" }),
    );
  });
});

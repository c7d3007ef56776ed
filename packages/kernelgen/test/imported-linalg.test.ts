// Imported GEMV (f32/bf16 weights, [K, N] and [N, K], 1..8 rows) and tiled GEMM launched from graph-plan metadata,
// against graph-ir's float64 MatMul on fresh random inputs, ragged shapes included (one row, one column, not a tile multiple).

import { describe, expect, it } from "vitest";
import { KernelgenError, importedLaunch } from "@poot/kernelgen";
import { expectClose, oracle, poisoned, randBf16, randF32, rng, run } from "./helpers.js";

/** y = x @ W (W stored [K, N], or [N, K] and transposed) and Σ|x||W| (the accumulation error's scale) from the oracle. */
function matmulOracle(
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  M: number,
  K: number,
  N: number,
  wDtype: "f32" | "bf16",
  layout: "kn" | "nk" = "kn",
) {
  return oracle(
    (b) => {
      const xr = b.const("x", "f32", [M, K]);
      const stored = b.f32(b.const("w", wDtype, layout === "kn" ? [K, N] : [N, K]));
      const wr = layout === "kn" ? stored : b.transpose(stored, [1, 0]);
      return { y: b.matmul(xr, wr), s: b.matmul(b.unary("Abs", xr), b.unary("Abs", wr)) };
    },
    { x, w },
  );
}

describe("imported GEMV", () => {
  const shapes: [number, number, number][] = [
    [1, 1, 1],
    [1, 7, 1],
    [1, 1, 65],
    [1, 33, 70],
    [1, 130, 129],
    [3, 40, 33],
    [8, 17, 64],
  ];
  for (const elem of ["f32", "bf16"] as const) {
    for (const layout of ["kn", "nk"] as const) {
      for (const [B, K, N] of shapes) {
        it(`gemv_${elem}_${layout} rows=${B} K=${K} N=${N}`, () => {
          const r = rng(B * 7919 + K * 31 + N + (elem === "bf16" ? 7 : 0) + (layout === "nk" ? 3 : 0));
          const W = elem === "f32" ? randF32(r, K * N) : randBf16(r, K * N);
          const x = randF32(r, B * K);
          // graph-plan's metadata for an imported GEMV: [K, N, rows, tileN].
          const l = importedLaunch(`gemv_${elem}_${layout}`, [K, N, B, 8]);
          const y = poisoned(l.kernel, "y", B * N);
          run(l.kernel, { grid: [...l.grid], buffers: { W, x, y }, uniforms: l.uniforms });
          const ref = matmulOracle(x, W, B, K, N, elem, layout);
          expectClose(y as Float32Array, ref.y!, ref.s!);
        });
      }
    }
  }
  // Wider than the grid's x limit: the N (nk) or ceil(N/32) (kn) workgroups split over x and y, the kernel
  // linearizing wid.y·nwg.x + wid.x; a small maxGridDim makes the split (and its surplus workgroups) cheap to interpret.
  const wide = {
    nk: [
      [64, 1, 3, 1000],
      [40, 2, 4, 1000],
      [7, 3, 2, 45],
    ],
    kn: [
      [5, 2, 4, 700],
      [3, 1, 3, 200],
      [4, 3, 2, 500],
    ],
  } as const;
  for (const layout of ["kn", "nk"] as const) {
    for (const [maxGridDim, B, K, N] of wide[layout]) {
      it(`gemv_bf16_${layout} N=${N} past maxGridDim=${maxGridDim} computes every column`, () => {
        const r = rng(N * 13 + maxGridDim + B + (layout === "nk" ? 1 : 0));
        const W = randBf16(r, K * N);
        const x = randF32(r, B * K);
        const l = importedLaunch(`gemv_bf16_${layout}`, [K, N, B, 8], { maxGridDim });
        const wgs = layout === "nk" ? N : Math.ceil(N / 32);
        expect(l.grid.every((g) => g <= maxGridDim)).toBe(true);
        expect(l.grid[1]).toBeGreaterThan(1);
        expect(l.grid[0] * l.grid[1] * l.grid[2]).toBeGreaterThanOrEqual(wgs);
        const y = poisoned(l.kernel, "y", B * N);
        run(l.kernel, { grid: [...l.grid], buffers: { W, x, y }, uniforms: l.uniforms });
        const ref = matmulOracle(x, W, B, K, N, "bf16", layout);
        expectClose(y as Float32Array, ref.y!, ref.s!);
      });
    }
  }
  it("a Llama-3-vocab LM head (N = 128256) launches within 65535 workgroups per axis", () => {
    for (const name of ["gemv_bf16_nk", "gemv_f32_nk", "gemv_bf16_kn", "gemv_f32_kn"]) {
      const l = importedLaunch(name, [64, 128256, 1, 8]);
      const wgs = name.endsWith("nk") ? 128256 : Math.ceil(128256 / 32);
      expect(Math.max(...l.grid)).toBeLessThanOrEqual(65535);
      expect(l.grid[0] * l.grid[1]).toBeGreaterThanOrEqual(wgs);
      expect(l.grid[0] * l.grid[1]).toBeLessThan(wgs + l.grid[1]);
    }
  });
  it("refuses launches whose grid cannot fit the limits with exceeds_caps", () => {
    // The tiled GEMM does not linearize: 16·65536 columns need 65536 workgroups along x.
    expect(() => importedLaunch("gemm_tiled_f32", [1, 16 * 65536, 4, 0])).toThrow(
      expect.objectContaining({ code: "exceeds_caps" }),
    );
    expect(importedLaunch("gemm_tiled_f32", [1, 16 * 65536, 4, 0], { maxGridDim: 2 ** 31 - 1 }).grid).toEqual([
      65536, 1, 1,
    ]);
    // argmax_chunk puts rows on y, the sampler rows on x.
    expect(() => importedLaunch("argmax_chunk", [8, 8, 65536])).toThrow(
      expect.objectContaining({ code: "exceeds_caps" }),
    );
    expect(() => importedLaunch("sample_gumbel", [8, 70000], { maxGridDim: 65535 })).toThrow(
      expect.objectContaining({ code: "exceeds_caps" }),
    );
    // Even a split over x and y has a limit.
    expect(() => importedLaunch("gemv_f32_nk", [4, 101, 1, 8], { maxGridDim: 10 })).toThrow(
      expect.objectContaining({ code: "exceeds_caps" }),
    );
  });
  it("refuses more than 8 rows and unknown names with typed errors", () => {
    expect(() => importedLaunch("gemv_f32_kn", [4, 4, 9, 8])).toThrow(expect.objectContaining({ code: "bad_param" }));
    expect(() => importedLaunch("packed_row_gather", [1, 2, 3])).toThrow(
      expect.objectContaining({ code: "unknown_kernel" }),
    );
    expect(() => importedLaunch("gemm_tiled_f32", [4, 4])).toThrow(KernelgenError);
  });
});

describe("imported tiled GEMM", () => {
  for (const elem of ["f32", "bf16"] as const) {
    for (const [M, K, N, t] of [
      [1, 1, 1, 0],
      [1, 20, 17, 1],
      [16, 16, 16, 0],
      [19, 33, 1, 1],
      [35, 18, 21, 0],
      [35, 18, 21, 1],
    ] as const) {
      it(`gemm_tiled_${elem} M=${M} K=${K} N=${N} transB=${t}`, () => {
        const r = rng(M * 131 + K * 17 + N + (elem === "bf16" ? 3 : 0) + t);
        const A = randF32(r, M * K);
        const Bm = elem === "f32" ? randF32(r, K * N) : randBf16(r, K * N);
        const l = importedLaunch(`gemm_tiled_${elem}`, [M, N, K, t]);
        const C = poisoned(l.kernel, "C", M * N);
        run(l.kernel, { grid: [...l.grid], buffers: { A, B: Bm, C }, uniforms: l.uniforms });
        const ref = matmulOracle(A, Bm, M, K, N, elem, t === 1 ? "nk" : "kn");
        expectClose(C as Float32Array, ref.y!, ref.s!);
      });
    }
  }
});

// Imported GEMV (f32/bf16 weights, [K, N] and [N, K], 1..8 rows) and tiled GEMM launched from graph-plan metadata,
// against graph-ir's float64 MatMul on fresh random inputs, ragged shapes included (one row, one column, not a tile multiple).

import { describe, expect, it } from "vitest";
import { KernelgenError, importedLaunch } from "@poot/kernelgen";
import { expectClose, oracle, poisoned, randBf16, randF32, rng, run } from "./helpers.js";

/** y = x @ W (W stored [K, N], or [N, K] and transposed) and Σ|x||W| (the accumulation error's scale) from the oracle. */
function matmulOracle(x: ArrayLike<number>, w: ArrayLike<number>, M: number, K: number, N: number, wDtype: "f32" | "bf16", layout: "kn" | "nk" = "kn") {
  return oracle((b) => {
    const xr = b.const("x", "f32", [M, K]);
    const stored = b.f32(b.const("w", wDtype, layout === "kn" ? [K, N] : [N, K]));
    const wr = layout === "kn" ? stored : b.transpose(stored, [1, 0]);
    return { y: b.matmul(xr, wr), s: b.matmul(b.unary("Abs", xr), b.unary("Abs", wr)) };
  }, { x, w });
}

describe("imported GEMV", () => {
  const shapes: [number, number, number][] = [[1, 1, 1], [1, 7, 1], [1, 1, 65], [1, 33, 70], [1, 130, 129], [3, 40, 33], [8, 17, 64]];
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
  it("refuses more than 8 rows and unknown names with typed errors", () => {
    expect(() => importedLaunch("gemv_f32_kn", [4, 4, 9, 8])).toThrow(expect.objectContaining({ code: "bad_param" }));
    expect(() => importedLaunch("packed_row_gather", [1, 2, 3])).toThrow(expect.objectContaining({ code: "unknown_kernel" }));
    expect(() => importedLaunch("gemm_tiled_f32", [4, 4])).toThrow(KernelgenError);
  });
});

describe("imported tiled GEMM", () => {
  for (const elem of ["f32", "bf16"] as const) {
    for (const [M, K, N, t] of [[1, 1, 1, 0], [1, 20, 17, 1], [16, 16, 16, 0], [19, 33, 1, 1], [35, 18, 21, 0], [35, 18, 21, 1]] as const) {
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

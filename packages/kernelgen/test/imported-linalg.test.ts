// Imported GEMV (f32/bf16, single and batched) and tiled GEMM run in the interpreter against graph-ir's
// float64 MatMul on fresh random inputs, including ragged shapes (one row, one column, not a tile multiple).

import { describe, it } from "vitest";
import { importedKernel } from "@poot/kernelgen";
import type { ImportedKernelName } from "@poot/kernelgen";
import { expectClose, oracle, poisoned, randBf16, randF32, rng, run } from "./helpers.js";

/** y = x @ W and Σ|x||W| (the scale of the accumulation error) from the oracle. */
function matmulOracle(x: ArrayLike<number>, w: ArrayLike<number>, M: number, K: number, N: number, wDtype: "f32" | "bf16") {
  return oracle((b) => {
    const xr = b.const("x", "f32", [M, K]);
    const wr = b.f32(b.const("w", wDtype, [K, N]));
    return { y: b.matmul(xr, wr), s: b.matmul(b.unary("Abs", xr), b.unary("Abs", wr)) };
  }, { x, w });
}

describe("imported GEMV", () => {
  const shapes: [number, number][] = [[1, 1], [7, 1], [1, 65], [33, 70], [130, 129]];
  for (const elem of ["f32", "bf16"] as const) {
    for (const [K, N] of shapes) {
      it(`gemv_${elem} K=${K} N=${N}`, () => {
        const r = rng(K * 1000 + N + (elem === "bf16" ? 7 : 0));
        const W = elem === "f32" ? randF32(r, K * N) : randBf16(r, K * N);
        const x = randF32(r, K);
        const kern = importedKernel(`gemv_${elem}` as ImportedKernelName);
        const y = poisoned(kern, "y", N);
        run(kern, { grid: [Math.ceil(N / 64)], buffers: { W, x, y }, uniforms: { K, N } });
        const ref = matmulOracle(x, W, 1, K, N, elem);
        expectClose(y as Float32Array, ref.y!, ref.s!);
      });
    }
    for (const [B, K, N] of [[1, 5, 3], [3, 40, 33], [8, 17, 64]] as const) {
      it(`gemv_batched_${elem} B=${B} K=${K} N=${N}`, () => {
        const r = rng(B * 7919 + K * 31 + N);
        const W = elem === "f32" ? randF32(r, K * N) : randBf16(r, K * N);
        const x = randF32(r, B * K);
        const kern = importedKernel(`gemv_batched_${elem}` as ImportedKernelName);
        const y = poisoned(kern, "y", B * N);
        run(kern, { grid: [Math.ceil(N / 32)], buffers: { W, x, y }, uniforms: { K, N, B } });
        const ref = matmulOracle(x, W, B, K, N, elem);
        expectClose(y as Float32Array, ref.y!, ref.s!);
      });
    }
  }
});

describe("imported tiled GEMM", () => {
  for (const elem of ["f32", "bf16"] as const) {
    for (const [M, K, N] of [[1, 1, 1], [1, 20, 17], [16, 16, 16], [19, 33, 1], [35, 18, 21]] as const) {
      it(`gemm_tiled_${elem} M=${M} K=${K} N=${N}`, () => {
        const r = rng(M * 131 + K * 17 + N + (elem === "bf16" ? 3 : 0));
        const A = randF32(r, M * K);
        const Bm = elem === "f32" ? randF32(r, K * N) : randBf16(r, K * N);
        const kern = importedKernel(`gemm_tiled_${elem}` as ImportedKernelName);
        const C = poisoned(kern, "C", M * N);
        run(kern, { grid: [Math.ceil(N / 16), Math.ceil(M / 16)], buffers: { A, B: Bm, C }, uniforms: { M, N, K } });
        const ref = matmulOracle(A, Bm, M, K, N, elem);
        expectClose(C as Float32Array, ref.y!, ref.s!);
      });
    }
  }
});

// The bandwidth GEMVs under the kernel-dsl interpreter against a float64 sum of the widened weights.
import { bf16BitsToF32, f32ToBf16Bits, interpret } from "@poot/kernel-dsl";
import { describe, expect, it } from "vitest";
import { gemvRowsBf16, gemvRowsBf16x2, gemvRowsF32, gemvRowsGrid } from "./row-gemvs.js";

function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32) * 2 - 1;
}

/** max |y - Σ w·x| / max(1, Σ |w·x|) over rows, the sums in float64. */
function relErr(y: Float32Array, w: (i: number) => number, x: Float32Array, N: number, K: number): number {
  let err = 0;
  for (let n = 0; n < N; n++) {
    let s = 0;
    let mag = 0;
    for (let k = 0; k < K; k++) {
      s += w(n * K + k) * x[k]!;
      mag += Math.abs(w(n * K + k) * x[k]!);
    }
    err = Math.max(err, Math.abs(y[n]! - s) / Math.max(1, mag));
  }
  return err;
}

describe("row GEMVs", () => {
  const r = lcg(5);
  it.each([
    ["gemv_rows_bf16", gemvRowsBf16, 19, 64],
    ["gemv_rows_bf16_x2", gemvRowsBf16x2, 11, 1024],
  ] as const)("%s matches a float64 reference (N %i, K %i), rows past N untouched", (_, kernel, N, K) => {
    const w = Uint16Array.from({ length: N * K }, () => f32ToBf16Bits(r()));
    const x = Float32Array.from({ length: K }, r);
    const y = new Float32Array(N + 3).fill(Number.NaN);
    interpret(kernel, {
      grid: gemvRowsGrid(N + 3),
      buffers: { W: new Uint32Array(w.buffer), x, y },
      uniforms: { N, K8: K / 8 },
      subgroupSize: 32,
    });
    expect(relErr(y, (i) => bf16BitsToF32(w[i]!), x, N, K)).toBeLessThan(1e-6);
    expect(Array.from(y.subarray(N)).every(Number.isNaN)).toBe(true);
  });

  it("gemv_rows_f32 matches a float64 reference", () => {
    const N = 13;
    const K = 96;
    const w = Float32Array.from({ length: N * K }, r);
    const x = Float32Array.from({ length: K }, r);
    const y = new Float32Array(N);
    interpret(gemvRowsF32, {
      grid: gemvRowsGrid(N),
      buffers: { W: w, x, y },
      uniforms: { N, K4: K / 4 },
      subgroupSize: 32,
    });
    expect(relErr(y, (i) => w[i]!, x, N, K)).toBeLessThan(1e-6);
  });
});

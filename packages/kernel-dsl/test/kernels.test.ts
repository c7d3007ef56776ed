// Public-API tests: the example DSL kernels run in the interpreter against hand-written float64 references,
// at ragged shapes with poisoned outputs; the planted missing barrier must be reported as a race.

import { describe, expect, it } from "vitest";
import { KernelRuntimeError, interpret } from "@poot/kernel-dsl";
import { gemv_f32, gemv_f32_missing_barrier, rowsum_subgroup } from "./fixtures/kernels/reductions.js";
import { bf16_unpack_repack, histogram } from "./fixtures/kernels/elementwise.js";
import { maxRelErr, refBf16, refRoundBf16, rng } from "./helpers.js";

function randF32(n: number, rand: () => number): Float32Array {
  return Float32Array.from({ length: n }, () => rand() * 2 - 1);
}

function gemvRef(W: Float32Array, x: Float32Array, N: number, K: number): { y: number[]; scale: number[] } {
  const y: number[] = [];
  const scale: number[] = [];
  for (let r = 0; r < N; r++) {
    let s = 0;
    let a = 0;
    for (let k = 0; k < K; k++) {
      s += (W[r * K + k] as number) * (x[k] as number);
      a += Math.abs((W[r * K + k] as number) * (x[k] as number));
    }
    y.push(s);
    scale.push(a);
  }
  return { y, scale };
}

describe("gemv_f32 (shared-memory tree reduction)", () => {
  const shapes: [number, number, number][] = [
    [5, 100, 64], // K not a multiple of WG
    [1, 37, 64], // one row
    [7, 1, 64], // one column
    [3, 64, 32], // K = WG exactly, WG respecialized
    [4, 200, 16],
  ];
  for (const [N, K, WG] of shapes) {
    it(`N=${N} K=${K} WG=${WG} matches the float64 reference`, () => {
      const rand = rng(N * 1000 + K);
      const W = randF32(N * K, rand);
      const x = randF32(K, rand);
      const y = new Float32Array(N).fill(NaN);
      interpret(gemv_f32, { grid: [N], buffers: { W, x, y }, uniforms: { K, N }, specs: { WG } });
      const ref = gemvRef(W, x, N, K);
      expect(maxRelErr(y, ref.y, ref.scale)).toBeLessThan(1e-6);
    });
  }

  it("reports the planted missing barrier as a race naming the kernel, array and index", () => {
    const rand = rng(7);
    const [N, K] = [2, 100];
    let err: unknown;
    try {
      interpret(gemv_f32_missing_barrier, {
        grid: [N],
        buffers: { W: randF32(N * K, rand), x: randF32(K, rand), y: new Float32Array(N) },
        uniforms: { K, N },
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(KernelRuntimeError);
    const re = err as KernelRuntimeError;
    expect(re.code).toBe("race");
    expect(re.kernel).toBe("gemv_f32_missing_barrier");
    expect(re.detail.array).toBe("part");
    expect(re.detail.index).toBeGreaterThanOrEqual(0);
    expect(re.detail.index).toBeLessThan(64);
    expect(re.message).toMatch(/gemv_f32_missing_barrier.*part\[\d+\]/);
  });

  it("reports an out-of-bounds read with the buffer and index", () => {
    const [N, K] = [2, 10];
    const run = (): void =>
      interpret(gemv_f32, {
        grid: [N],
        buffers: { W: new Float32Array(N * K - 1), x: new Float32Array(K), y: new Float32Array(N) },
        uniforms: { K, N },
      });
    expect(run).toThrow(
      expect.objectContaining({
        code: "out_of_bounds",
        detail: expect.objectContaining({ array: "W", index: N * K - 1, length: N * K - 1 }),
      }),
    );
  });
});

describe("rowsum_subgroup (subgroup reduce)", () => {
  const cases: [number, number, number][] = [
    [3, 100, 32],
    [1, 1, 8], // one row, one column
    [5, 64, 4],
    [2, 65, 16],
    [2, 130, 64],
  ];
  for (const [R, C, sg] of cases) {
    it(`R=${R} C=${C} subgroup=${sg}`, () => {
      const rand = rng(R * 31 + C + sg);
      const A = randF32(R * C, rand);
      const out = new Float32Array(R).fill(NaN);
      interpret(rowsum_subgroup, { grid: [R], buffers: { A, out }, uniforms: { C }, subgroupSize: sg });
      const ref: number[] = [];
      const scale: number[] = [];
      for (let r = 0; r < R; r++) {
        let s = 0;
        let a = 0;
        for (let c = 0; c < C; c++) {
          s += A[r * C + c] as number;
          a += Math.abs(A[r * C + c] as number);
        }
        ref.push(s);
        scale.push(a);
      }
      expect(maxRelErr(out, ref, scale)).toBeLessThan(1e-6);
    });
  }
});

describe("bf16_unpack_repack", () => {
  const special = [0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc1, 0x0001, 0x807f, 0x7f7f, 0x3f80, 0xc2f7];
  for (const [n, scale] of [
    [1, 3],
    [63, 0.1],
    [130, 1.5e38],
  ] as const) {
    it(`n=${n} scale=${scale}`, () => {
      const rand = rng(n);
      const halves = Array.from({ length: 2 * n }, (_, i) => special[i] ?? Math.floor(rand() * 65536));
      const packed = Uint32Array.from(
        { length: n },
        (_, i) => ((halves[2 * i] as number) | ((halves[2 * i + 1] as number) << 16)) >>> 0,
      );
      const out = new Float32Array(2 * n).fill(NaN);
      const repacked = new Uint32Array(n).fill(0xdeadbeef);
      interpret(bf16_unpack_repack, {
        grid: [Math.ceil(n / 64)],
        buffers: { packed, out, repacked },
        uniforms: { n, scale },
      });
      const s32 = Math.fround(scale);
      for (let j = 0; j < 2 * n; j++) {
        const v = refBf16(halves[j] as number);
        expect(Object.is(out[j], v), `out[${j}] = ${out[j]}, want ${v}`).toBe(true);
        const word = repacked[j >> 1] as number;
        const got = refBf16(j % 2 === 0 ? word & 0xffff : word >>> 16);
        const want = refRoundBf16(Math.fround(v * s32));
        expect(Object.is(got, want), `repacked half ${j}: ${got}, want ${want} (from ${v})`).toBe(true);
      }
    });
  }
});

describe("histogram (workgroup + global atomics)", () => {
  for (const [n, B] of [
    [1, 16],
    [31, 16],
    [100, 5],
    [1000, 16],
  ] as const) {
    it(`n=${n} B=${B}`, () => {
      const rand = rng(n + B);
      const values = Uint32Array.from({ length: n }, () => Math.floor(rand() * 1e6));
      const counts = new Uint32Array(B);
      interpret(histogram, { grid: [Math.ceil(n / 32)], buffers: { values, counts }, uniforms: { n }, specs: { B } });
      const ref = new Array<number>(B).fill(0);
      for (const v of values) ref[v % B] = (ref[v % B] as number) + 1;
      expect(Array.from(counts)).toEqual(ref);
    });
  }
});

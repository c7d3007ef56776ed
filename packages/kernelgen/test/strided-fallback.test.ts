// The strided fallback kernels in the kernel-dsl interpreter against float64 loops: a middle-axis sum (the
// shape qwen3.5's delta-net layers ask for), max over two axes with keepdim, and a batch-broadcast matmul.

import { describe, expect, test } from "vitest";
import type { Access, KernelRequest } from "@poot/graph-plan";
import { interpret } from "@poot/kernel-dsl";
import { stridedFallback } from "../src/synth/strided.js";

const caps = { maxWorkgroup: 256, sharedBytes: 16384, maxGridDim: 65535 };
const dense = (value: number, shape: number[], dtype = "f32"): Access => {
  const strides = shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1));
  return { value, root: value, dtype: dtype as "f32", shape, strides, offset: 0 };
};
const seeded = (n: number, seed: number): Float32Array =>
  Float32Array.from({ length: n }, (_, i) => Math.sin(seed * 1000 + i * 1.37) * 3);

function run(req: KernelRequest, inputs: Float32Array[], outN: number): Float32Array {
  const k = stridedFallback(req, caps, "t")!;
  const out = new Float32Array(outN).fill(NaN);
  const buffers: Record<string, Float32Array> = {};
  for (const b of k.bindings) buffers[b.buffer] = b.source.kind === "output" ? out : inputs[b.source.index]!;
  interpret(k.kernel, { grid: [...k.grid] as [number, number, number], buffers });
  return out;
}

describe("strided fallback kernels", () => {
  test("sum over axis 2 of [1, 4, 16, 16] (keepdim false)", () => {
    const x = seeded(1024, 1);
    const req: KernelRequest = {
      kind: "reduction-row",
      op: "Reduce",
      inputs: [dense(1, [1, 4, 16, 16])],
      output: dense(2, [1, 4, 16]),
      params: { kind: "sum", axes: [2], keepdim: false },
      region: null,
      emulated16: false,
    };
    const got = run(req, [x], 64);
    for (let h = 0; h < 4; h++)
      for (let j = 0; j < 16; j++) {
        let s = 0;
        for (let i = 0; i < 16; i++) s += x[h * 256 + i * 16 + j]!;
        expect(Math.abs(got[h * 16 + j]! - s)).toBeLessThan(1e-5 * 16 * 3);
      }
  });

  test("max over axes [0, 2] of [3, 5, 7] with keepdim", () => {
    const x = seeded(105, 2);
    const req: KernelRequest = {
      kind: "reduction-row",
      op: "Reduce",
      inputs: [dense(1, [3, 5, 7])],
      output: dense(2, [1, 5, 1]),
      params: { kind: "max", axes: [0, 2], keepdim: true },
      region: null,
      emulated16: false,
    };
    const got = run(req, [x], 5);
    for (let j = 0; j < 5; j++) {
      let m = -Infinity;
      for (let i = 0; i < 3; i++) for (let k = 0; k < 7; k++) m = Math.max(m, x[i * 35 + j * 7 + k]!);
      expect(got[j]).toBe(m);
    }
  });

  test("[2, 3, 4] x [1, 4, 5] broadcasts B over the batch", () => {
    const a = seeded(24, 3),
      b = seeded(20, 4);
    const req: KernelRequest = {
      kind: "gemm",
      op: "MatMul",
      inputs: [dense(1, [2, 3, 4]), dense(2, [1, 4, 5])],
      output: dense(3, [2, 3, 5]),
      params: { transposeB: false },
      region: null,
      emulated16: false,
    };
    const got = run(req, [a, b], 30);
    for (let n = 0; n < 2; n++)
      for (let i = 0; i < 3; i++)
        for (let j = 0; j < 5; j++) {
          let s = 0;
          for (let k = 0; k < 4; k++) s += a[n * 12 + i * 4 + k]! * b[k * 5 + j]!;
          expect(Math.abs(got[n * 15 + i * 5 + j]! - s)).toBeLessThan(1e-5);
        }
  });
});

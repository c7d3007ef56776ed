// codegen's SPIR-V for kernel-dsl kernels (GEMV, subgroup reduction, bf16 unpack, elementwise) run on a
// Vulkan device (lavapipe here) and match both the kernel-dsl interpreter and float64 references.

import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { f32ToBf16Bits, interpret } from "@poot/kernel-dsl";
import { launchKernel, type VulkanDevice } from "@poot/backend-vulkan";
import { noVulkan, openDevice, relErr, rng, uniformF32 } from "./helpers.js";
import { bf16Unpack, gemv, rowMax, siluMul } from "./kernels.js";

describe.skipIf(noVulkan !== undefined)(
  `SPIR-V kernels on Vulkan${noVulkan === undefined ? "" : ` (skipped: ${noVulkan})`}`,
  () => {
    let device: VulkanDevice;
    beforeAll(() => {
      device = openDevice({ timestamps: true });
    });
    afterAll(() => device?.dispose());

    test("GEMV (shared-memory tree) equals the interpreter and a float64 dot product", () => {
      const rows = 37,
        K = 300,
        r = rng(1);
      const w = uniformF32(rows * K, r),
        x = uniformF32(K, r);
      const got = new Float32Array(rows).fill(NaN),
        ref = new Float32Array(rows).fill(NaN);
      const t = launchKernel(device, gemv, [rows, 1, 1], { w, x, y: got }, { k: K }, { timestamps: true });
      interpret(gemv, { grid: [rows, 1, 1], buffers: { w, x, y: ref }, uniforms: { k: K } });
      const f64 = Array.from({ length: rows }, (_, i) => {
        let s = 0;
        for (let c = 0; c < K; c++) s += w[i * K + c]! * x[c]!;
        return s;
      });
      expect(relErr(got, ref)).toBeLessThan(1e-5);
      expect(relErr(got, f64)).toBeLessThan(1e-5);
      // A timestamped dispatch takes a positive, finite time.
      if (t !== null) expect(t.ns).toBeGreaterThan(0);
    });

    test("subgroup row max equals the interpreter and the exact maximum", (ctx) => {
      if (device.caps.subgroupSize === undefined)
        return ctx.skip(`${device.info.name} has no subgroup arithmetic in compute`);
      const rows = 45,
        K = 53,
        r = rng(2);
      const a = uniformF32(rows * K, r, -100, 100);
      const got = new Float32Array(rows).fill(NaN),
        ref = new Float32Array(rows).fill(NaN);
      const sg = device.caps.subgroupSize;
      const grid: [number, number, number] = [Math.ceil(rows / (64 / sg)), 1, 1];
      launchKernel(device, rowMax, grid, { a, out: got }, { k: K, rows });
      interpret(rowMax, { grid, buffers: { a, out: ref }, uniforms: { k: K, rows }, subgroupSize: sg });
      const exact = Array.from({ length: rows }, (_, i) => Math.max(...a.subarray(i * K, (i + 1) * K)));
      expect(Array.from(got)).toEqual(exact);
      expect(Array.from(ref)).toEqual(exact);
    });

    test("bf16 unpack widens exactly (bits << 16), including negative zero and the extremes", () => {
      const r = rng(3);
      const vals = [...uniformF32(198, r, -1e4, 1e4), -0, 3.3895313892515355e38];
      const bits = vals.map((v) => f32ToBf16Bits(v));
      const packed = Uint32Array.from(
        { length: vals.length / 2 },
        (_, i) => (bits[2 * i]! | (bits[2 * i + 1]! << 16)) >>> 0,
      );
      const got = new Float32Array(vals.length).fill(NaN),
        ref = new Float32Array(vals.length).fill(NaN);
      const n = packed.length,
        grid: [number, number, number] = [Math.ceil(n / 64), 1, 1];
      launchKernel(device, bf16Unpack, grid, { packed, out: got }, { n });
      interpret(bf16Unpack, { grid, buffers: { packed, out: ref }, uniforms: { n } });
      const exact = new Float32Array(new Uint32Array(bits.map((b) => (b << 16) >>> 0)).buffer);
      expect(new Uint32Array(got.buffer)).toEqual(new Uint32Array(exact.buffer));
      expect(new Uint32Array(ref.buffer)).toEqual(new Uint32Array(exact.buffer));
    });

    test("elementwise silu(a)·b·scale equals the interpreter and float64 within f32 rounding", () => {
      const n = 1000,
        r = rng(4),
        scale = -0.75;
      const a = uniformF32(n, r, -8, 8),
        b = uniformF32(n, r);
      const got = new Float32Array(n).fill(NaN),
        ref = new Float32Array(n).fill(NaN);
      const grid: [number, number, number] = [Math.ceil(n / 64), 1, 1];
      launchKernel(device, siluMul, grid, { a, b, out: got }, { n, scale });
      interpret(siluMul, { grid, buffers: { a, b, out: ref }, uniforms: { n, scale } });
      const f64 = Array.from(a, (x, i) => (x / (1 + Math.exp(-x))) * b[i]! * scale);
      expect(relErr(got, ref)).toBeLessThan(1e-6);
      expect(relErr(got, f64)).toBeLessThan(1e-6);
    });

    test("the validation layer (when installed) reported no errors", () => {
      expect(device.instance.errors()).toEqual([]);
    });
  },
);

// The kernel harness: kernelgen's kernels lowered to WGSL by codegen run through the backend's own path
// (buffers, pipeline cache, bind, step) on lavapipe, checked against kernel-dsl's interpreter and float64.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lowerWgsl } from "@poot/codegen";
import { interpret, type Kernel, type KernelBuffer } from "@poot/kernel-dsl";
import {
  importedKernel,
  synthesizeElementwise,
  synthesizeGemv,
  synthesizeReductionRow,
  type ExprNode,
} from "@poot/kernelgen";
import { codegenCaps, fixedSubgroupSize, synthCaps, type WgpuContext } from "@poot/backend-wgpu";
import { runKernel } from "./run-kernel.js";
import { bf16Bits, bf16Value, openTestContext, rand, relErr } from "./helpers.js";

let ctx: WgpuContext | undefined;
let why = "";
beforeAll(async () => {
  const r = await openTestContext();
  if ("ctx" in r) ctx = r.ctx;
  else why = r.reason;
});
afterAll(() => ctx?.dispose());

/** Runs on the device and in the interpreter from identical inputs; returns both copies of every buffer. */
async function both(
  c: WgpuContext,
  kernel: Kernel,
  grid: readonly [number, number, number],
  make: () => Record<string, KernelBuffer>,
  opts: {
    uniforms?: Record<string, number>;
    specs?: Record<string, number>;
    subgroupSize?: number;
    lower?: typeof lowerWgsl;
  } = {},
) {
  const dev = make(),
    ref = make();
  const code = (opts.lower ?? lowerWgsl)(
    kernel,
    codegenCaps(c.caps),
    opts.specs !== undefined ? { specs: opts.specs } : {},
  );
  await runKernel(c, {
    kernel,
    code,
    grid,
    buffers: dev,
    ...(opts.uniforms !== undefined ? { uniforms: opts.uniforms } : {}),
  });
  interpret(kernel, {
    grid: [...grid],
    buffers: ref,
    ...(opts.uniforms !== undefined ? { uniforms: opts.uniforms } : {}),
    ...(opts.specs !== undefined ? { specs: opts.specs } : {}),
    subgroupSize: opts.subgroupSize ?? fixedSubgroupSize(c.caps) ?? 32,
  });
  return { dev, ref };
}

const leaf = (name: string): ExprNode => ({ op: "leaf", name });

describe("WGSL kernels through the backend match the interpreter and float64", () => {
  it("the device reports the caps the kernels are sized from", (t) => {
    if (ctx === undefined) return t.skip(why);
    const a = ctx.device.adapter;
    // Granted limits are the adapter's best (the device requests them), read here from the adapter itself.
    expect(ctx.caps.maxStorageBuffers).toBe(a.limits.maxStorageBuffersPerShaderStage);
    expect(ctx.caps.maxWorkgroup).toBe(a.limits.maxComputeInvocationsPerWorkgroup);
    expect(ctx.caps.sharedBytes).toBe(a.limits.maxComputeWorkgroupStorageSize);
    expect(ctx.caps.f16).toBe(a.features.has("shader-f16"));
    expect(ctx.caps.subgroups).toBe(a.features.has("subgroups"));
    expect(ctx.caps.timestamps).toBe(a.features.has("timestamp-query"));
  });

  it("GEMV over bf16 [N, K] weights, batch 2 (synthesized; subgroup reduce when the size is fixed)", async (t) => {
    if (ctx === undefined) return t.skip(why);
    const K = 96,
      N = 40,
      B = 2;
    const s = synthesizeGemv(
      { name: "gemv_t", K, N, batch: B, weight: { dtype: "bf16", layout: "nk" } },
      synthCaps(ctx.caps),
    );
    const x = rand(1, B * K),
      wf = rand(2, N * K);
    const w = Uint16Array.from(wf, bf16Bits);
    const { dev, ref } = await both(
      ctx,
      s.kernel,
      s.grid,
      () => ({ x: x.slice(), W: w.slice(), y: new Float32Array(B * N).fill(NaN) }),
      s.subgroupSize !== undefined ? { subgroupSize: s.subgroupSize } : {},
    );
    // float64 oracle from the definition: y[b, n] = Σ_k x[b, k] · bf16(W[n, k]).
    const want = new Float64Array(B * N);
    for (let b = 0; b < B; b++)
      for (let n = 0; n < N; n++) {
        let acc = 0;
        for (let k = 0; k < K; k++) acc += x[b * K + k]! * bf16Value(w[n * K + k]!);
        want[b * N + n] = acc;
      }
    expect(relErr(dev.y!, want)).toBeLessThan(1e-5);
    expect(relErr(dev.y!, ref.y!)).toBeLessThan(1e-6);
  });

  it("imported gemv_bf16_kn over [K, N], batch 2, with its uniforms and specialization constants", async (t) => {
    if (ctx === undefined) return t.skip(why);
    const K = 70,
      N = 50,
      B = 2,
      WGX = 16,
      WGY = 4;
    const kern = importedKernel("gemv_bf16_kn");
    const x = rand(3, B * K),
      wf = rand(4, K * N);
    const w = Uint16Array.from(wf, bf16Bits);
    const specs = { WGX, WGY, MAXB: 8, PART: 8 * WGX * WGY };
    const { dev, ref } = await both(
      ctx,
      kern,
      [Math.ceil(N / WGX), 1, 1],
      () => ({ W: w.slice(), x: x.slice(), y: new Float32Array(B * N).fill(NaN) }),
      { uniforms: { K, N, B }, specs },
    );
    const want = new Float64Array(B * N);
    for (let b = 0; b < B; b++)
      for (let n = 0; n < N; n++)
        for (let k = 0; k < K; k++) want[b * N + n]! += x[b * K + k]! * bf16Value(w[k * N + n]!);
    expect(relErr(dev.y!, want)).toBeLessThan(1e-5);
    expect(relErr(dev.y!, ref.y!)).toBeLessThan(1e-6);
  });

  it("RMSNorm rows over a bf16 input and an f32 weight, 5 × 70", async (t) => {
    if (ctx === undefined) return t.skip(why);
    const rows = 5,
      cols = 70,
      eps = 1e-5;
    const s = synthesizeReductionRow(
      {
        name: "rmsnorm_t",
        rows,
        cols,
        inputs: [
          { name: "x", dtype: "bf16", kind: "row" },
          { name: "w", dtype: "f32", kind: "col" },
        ],
        // y = x / sqrt(Σx²/C + eps) · w
        nodes: [
          leaf("x"),
          { op: "binary", fn: "mul", a: 0, b: 0 },
          leaf("r0"),
          { op: "const", value: cols, type: "f32" },
          { op: "binary", fn: "div", a: 2, b: 3 },
          { op: "const", value: eps, type: "f32" },
          { op: "binary", fn: "add", a: 4, b: 5 },
          { op: "unary", fn: "rsqrt", a: 6 },
          { op: "binary", fn: "mul", a: 0, b: 7 },
          leaf("w"),
          { op: "binary", fn: "mul", a: 8, b: 9 },
        ],
        reductions: [{ kind: "sum", node: 1 }],
        outputs: [{ name: "y", dtype: "f32", node: 10, per: "element" }],
      },
      synthCaps(ctx.caps),
    );
    const x = Uint16Array.from(rand(5, rows * cols, -4, 4), bf16Bits);
    const w = rand(9, cols, 0.5, 1.5);
    const { dev, ref } = await both(
      ctx,
      s.kernel,
      s.grid,
      () => ({ x: x.slice(), w: w.slice(), y: new Float32Array(rows * cols).fill(NaN) }),
      s.subgroupSize !== undefined ? { subgroupSize: s.subgroupSize } : {},
    );
    const want = new Float64Array(rows * cols);
    for (let r = 0; r < rows; r++) {
      let ss = 0;
      for (let c = 0; c < cols; c++) ss += bf16Value(x[r * cols + c]!) ** 2;
      const inv = 1 / Math.sqrt(ss / cols + eps);
      for (let c = 0; c < cols; c++) want[r * cols + c] = bf16Value(x[r * cols + c]!) * inv * w[c]!;
    }
    expect(relErr(dev.y!, want)).toBeLessThan(1e-5);
    expect(relErr(dev.y!, ref.y!)).toBeLessThan(1e-5);
  });

  it("softmax rows (a max reduction seeded with -inf): codegen's WGSL passes Tint and equals float64", async (t) => {
    if (ctx === undefined) return t.skip(why);
    const rows = 5,
      cols = 70;
    const s = synthesizeReductionRow(
      {
        name: "softmax_t",
        rows,
        cols,
        inputs: [{ name: "x", dtype: "f32", kind: "row" }],
        nodes: [
          leaf("x"),
          leaf("r0"),
          { op: "binary", fn: "sub", a: 0, b: 1 },
          { op: "unary", fn: "exp", a: 2 },
          leaf("r1"),
          { op: "binary", fn: "div", a: 3, b: 4 },
        ],
        reductions: [
          { kind: "max", node: 0 },
          { kind: "sum", node: 3 },
        ],
        outputs: [{ name: "y", dtype: "f32", node: 5, per: "element" }],
      },
      synthCaps(ctx.caps),
    );
    // codegen reads non-finite constants at run time (Tint rejects a -inf literal), so its own lowering runs here.
    const x = rand(5, rows * cols, -6, 6);
    const { dev } = await both(
      ctx,
      s.kernel,
      s.grid,
      () => ({ x: x.slice(), y: new Float32Array(rows * cols).fill(NaN) }),
      { ...(s.subgroupSize !== undefined ? { subgroupSize: s.subgroupSize } : {}) },
    );
    const want = new Float64Array(rows * cols);
    for (let r = 0; r < rows; r++) {
      const row = Array.from(x.subarray(r * cols, (r + 1) * cols));
      const m = Math.max(...row);
      const z = row.reduce((a, v) => a + Math.exp(v - m), 0);
      row.forEach((v, c) => (want[r * cols + c] = Math.exp(v - m) / z));
    }
    expect(relErr(dev.y!, want)).toBeLessThan(1e-6);
  });

  it("bf16 pairs unpacked to f32 (odd count) are exact", async (t) => {
    if (ctx === undefined) return t.skip(why);
    const n = 37;
    const kern = importedKernel("convert_bf16x2_f32");
    const bits = Uint16Array.from(rand(6, n, -300, 300), bf16Bits);
    bits[3] = 0x7f80; // +inf
    bits[4] = 0x8000; // -0
    bits[5] = 0x0001; // smallest subnormal
    const words = new Uint32Array(Math.ceil(n / 2));
    new Uint16Array(words.buffer).set(bits);
    const WG = 8;
    const { dev, ref } = await both(
      ctx,
      kern,
      [Math.ceil(words.length / WG), 1, 1],
      () => ({ in: words.slice(), out: new Float32Array(n).fill(NaN) }),
      { uniforms: { n }, specs: { WG } },
    );
    // Exact oracle: the bits as the high half of an f32 (Object.is tells -0 from 0).
    const want = Array.from(bits, bf16Value);
    expect(Array.from(dev.out!).every((v, i) => Object.is(v, want[i]))).toBe(true);
    expect(Array.from(ref.out!)).toEqual(Array.from(dev.out!));
  });

  it("elementwise region with a broadcast bf16 operand and a bf16 store", async (t) => {
    if (ctx === undefined) return t.skip(why);
    const shape = [6, 8];
    const s = synthesizeElementwise(
      {
        name: "ew_t",
        shape,
        inputs: [
          { name: "x", dtype: "f32", shape: [6, 8] },
          { name: "w", dtype: "bf16", shape: [8] },
        ],
        // y = tanh(x · w) + exp(-x), stored as f32 and as bf16
        nodes: [
          leaf("x"),
          leaf("w"),
          { op: "binary", fn: "mul", a: 0, b: 1 },
          { op: "unary", fn: "tanh", a: 2 },
          { op: "unary", fn: "neg", a: 0 },
          { op: "unary", fn: "exp", a: 4 },
          { op: "binary", fn: "add", a: 3, b: 5 },
        ],
        outputs: [
          { name: "y", dtype: "f32", node: 6 },
          { name: "yb", dtype: "bf16", node: 6 },
        ],
      },
      synthCaps(ctx.caps),
    );
    const x = rand(7, 48, -3, 3);
    const w = Uint16Array.from(rand(8, 8), bf16Bits);
    const { dev, ref } = await both(ctx, s.kernel, s.grid, () => ({
      x: x.slice(),
      w: w.slice(),
      y: new Float32Array(48).fill(NaN),
      yb: new Uint16Array(48),
    }));
    const want = Array.from(x, (v, i) => Math.tanh(v * bf16Value(w[i % 8]!)) + Math.exp(-v));
    expect(relErr(dev.y!, want)).toBeLessThan(1e-5);
    expect(relErr(dev.y!, ref.y!)).toBeLessThan(1e-5);
    // The bf16 store rounds the f32 result once: each stored value is within one bf16 ulp of the oracle.
    const yb = Array.from(dev.yb!, bf16Value);
    expect(yb.every((v, i) => Math.abs(v - want[i]!) <= Math.abs(want[i]!) * 2 ** -8 + 1e-6)).toBe(true);
  });
});

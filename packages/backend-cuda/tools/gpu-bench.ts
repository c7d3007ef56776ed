// GPU benchmarks: launch overhead (plain launches vs CUDA graph replay), device copy bandwidth, and decode
// GEMVs at Llama-3.2-1B shapes in GB/s against the copy bandwidth. Medians of several runs.

import { bf16BitsToF32, f32ToBf16Bits, type Kernel } from "@poot/kernel-dsl";
import { synthesizeGemv } from "@poot/kernelgen";
import { type CudaContext, type DeviceBuffer, type LaunchParams } from "@poot/backend-cuda";
import { gemvRowsBf16, gemvRowsBf16x2, gemvRowsF32, gemvRowsGrid } from "../test/row-gemvs.js";
import { addPos, rng } from "./gpu-cases.js";

export { rng };

const RUNS = 7;

/** Median of a list. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Launch overhead: host µs per plain launch, and per kernel inside a replayed graph (host wall and GPU). */
export function benchLaunch(ctx: CudaContext, launches = 1000): Record<string, number> {
  const k = ctx.compile(addPos);
  const x = ctx.allocate(4 * 64);
  const pos = ctx.allocate(4);
  const out = ctx.allocate(4 * 64);
  const params = k.bind({ buffers: { x, pos, out }, uniforms: { n: 64 } });
  const grid: [number, number, number] = [1, 1, 1];
  const plain: number[] = [];
  const plainGpu: number[] = [];
  const a = ctx.createEvent();
  const b = ctx.createEvent();
  for (let r = 0; r < RUNS + 1; r++) {
    ctx.synchronize();
    a.record(ctx.stream);
    const t0 = performance.now();
    for (let i = 0; i < launches; i++) k.launch(grid, params);
    const t1 = performance.now();
    b.record(ctx.stream);
    b.synchronize();
    if (r > 0) {
      plain.push(((t1 - t0) * 1000) / launches);
      plainGpu.push((b.elapsedSince(a) * 1000) / launches);
    }
  }
  const graph = ctx.capture(() => {
    for (let i = 0; i < launches; i++) k.launch(grid, params);
  });
  const replayWall: number[] = [];
  const replayGpu: number[] = [];
  for (let r = 0; r < RUNS + 1; r++) {
    ctx.synchronize();
    const t0 = performance.now();
    a.record(ctx.stream);
    graph.launch(ctx.stream);
    b.record(ctx.stream);
    b.synchronize();
    const t1 = performance.now();
    if (r > 0) {
      replayWall.push(((t1 - t0) * 1000) / launches);
      replayGpu.push((b.elapsedSince(a) * 1000) / launches);
    }
  }
  graph.dispose();
  params.dispose();
  a.dispose();
  b.dispose();
  for (const buf of [x, pos, out]) buf.dispose();
  return {
    launches,
    plainHostUsPerLaunch: median(plain),
    plainGpuUsPerKernel: median(plainGpu),
    graphWallUsPerKernel: median(replayWall),
    graphGpuUsPerKernel: median(replayGpu),
    ratioPlainHostOverGraphWall: median(plain) / median(replayWall),
  };
}

/** cuMemcpyDtoD bandwidth over `bytes`-byte buffers: (read + write) bytes per second, median of RUNS runs of 5 copies. */
export function benchCopy(ctx: CudaContext, bytes = 1 << 30): Record<string, number> {
  const src = ctx.allocate(bytes);
  const dst = ctx.allocate(bytes);
  src.fill(1, ctx.stream);
  const a = ctx.createEvent();
  const b = ctx.createEvent();
  const gbps: number[] = [];
  for (let r = 0; r < RUNS + 1; r++) {
    a.record(ctx.stream);
    for (let i = 0; i < 5; i++) dst.copyFrom(src, bytes, ctx.stream);
    b.record(ctx.stream);
    b.synchronize();
    if (r > 0) gbps.push((2 * bytes * 5) / (b.elapsedSince(a) * 1e-3) / 1e9);
  }
  a.dispose();
  b.dispose();
  src.dispose();
  dst.dispose();
  return { bytes, copyReadWriteGBps: median(gbps) };
}

/** One GEMV configuration's figures. */
export interface GemvFigure {
  readonly kernel: string;
  readonly dtype: "bf16" | "f32";
  readonly N: number;
  readonly K: number;
  readonly us: number;
  readonly GBps: number;
  readonly ratioToCopy: number;
  readonly maxRelErr: number;
}

const CHUNK = 1 << 22;

/**
 * Times y = W x for W [N, K] (rows of HF linear weights) with the backend's 16-byte-load row GEMV and with
 * kernelgen's synthesized [N, K] GEMV. Weights are a random chunk tiled on the device; several copies
 * rotate so the working set exceeds the L2 cache. Sampled rows are checked against a float64 sum.
 */
export function benchGemv(
  ctx: CudaContext,
  N: number,
  K: number,
  dtype: "bf16" | "f32",
  copyGBps: number,
): GemvFigure[] {
  const esize = dtype === "bf16" ? 2 : 4;
  const bytes = N * K * esize;
  const r = rng(N ^ K);
  const chunk =
    dtype === "bf16"
      ? Uint16Array.from({ length: CHUNK }, () => f32ToBf16Bits(r() * 2 - 1))
      : Float32Array.from({ length: CHUNK }, () => r() * 2 - 1);
  const wAt = (i: number): number => (dtype === "bf16" ? bf16BitsToF32(chunk[i % CHUNK]!) : chunk[i % CHUNK]!);
  const chunkDev = ctx.upload(chunk);
  const copies = Math.max(1, Math.ceil((256 << 20) / bytes));
  const weights: DeviceBuffer[] = [];
  for (let c = 0; c < copies; c++) {
    const w = ctx.allocate(bytes);
    for (let off = 0; off < bytes; off += chunk.byteLength) {
      const n = Math.min(chunk.byteLength, bytes - off);
      ctx.device.api.cuMemcpyDtoDAsync(w.ptr + BigInt(off), chunkDev.ptr, n, ctx.stream.handle);
    }
    weights.push(w);
  }
  const x = Float32Array.from({ length: K }, () => r() * 2 - 1);
  const xDev = ctx.upload(x);
  const yDev = ctx.allocate(4 * N);
  const sg = ctx.caps.subgroupSize ?? 32;
  const synth = synthesizeGemv({ name: `kg_gemv_${dtype}_${N}x${K}`, K, N, weight: { dtype, layout: "nk" } }, ctx.caps);
  const variants: {
    name: string;
    kernel: Kernel;
    grid: readonly [number, number, number];
    uniforms: Record<string, number>;
  }[] = [
    {
      name: `gemv_rows_${dtype} (backend-cuda, 16-byte loads)`,
      kernel: dtype === "bf16" ? gemvRowsBf16 : gemvRowsF32,
      grid: gemvRowsGrid(N, sg),
      uniforms: dtype === "bf16" ? { N, K8: K / 8 } : { N, K4: K / 4 },
    },
    ...(dtype === "bf16" && K % 512 === 0
      ? [
          {
            name: "gemv_rows_bf16_x2 (backend-cuda, 2x16-byte loads)",
            kernel: gemvRowsBf16x2,
            grid: gemvRowsGrid(N, sg),
            uniforms: { N, K8: K / 8 },
          },
        ]
      : []),
    { name: "kernelgen synthesizeGemv nk", kernel: synth.kernel, grid: synth.grid, uniforms: {} },
  ];
  const a = ctx.createEvent();
  const b = ctx.createEvent();
  const figures: GemvFigure[] = [];
  for (const v of variants) {
    const compiled = ctx.compile(v.kernel);
    const params: LaunchParams[] = weights.map((w) =>
      compiled.bind({ buffers: { W: w, x: xDev, y: yDev }, uniforms: v.uniforms }),
    );
    const reps = Math.max(copies, 10);
    const times: number[] = [];
    for (let run = 0; run < RUNS + 1; run++) {
      a.record(ctx.stream);
      for (let i = 0; i < reps; i++) compiled.launch(v.grid as [number, number, number], params[i % copies]!);
      b.record(ctx.stream);
      b.synchronize();
      if (run > 0) times.push((b.elapsedSince(a) * 1000) / reps);
    }
    const y = yDev.download(new Float32Array(N));
    let err = 0;
    const rows = [0, N - 1, ...Array.from({ length: 6 }, () => Math.floor(r() * N))];
    for (const n of rows) {
      let s = 0;
      let scale = 0;
      for (let k = 0; k < K; k++) {
        const t = wAt(n * K + k) * x[k]!;
        s += t;
        scale += Math.abs(t);
      }
      err = Math.max(err, Math.abs(y[n]! - s) / Math.max(1, scale));
    }
    const us = median(times);
    const GBps = (bytes + 4 * K + 4 * N) / (us * 1e-6) / 1e9;
    figures.push({ kernel: v.name, dtype, N, K, us, GBps, ratioToCopy: GBps / copyGBps, maxRelErr: err });
    for (const p of params) p.dispose();
  }
  a.dispose();
  b.dispose();
  for (const w of weights) w.dispose();
  for (const buf of [chunkDev, xDev, yDev]) buf.dispose();
  ctx.pool.trim();
  return figures;
}

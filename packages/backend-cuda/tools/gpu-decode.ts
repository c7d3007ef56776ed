// The GEMVs of one Llama-3.2-1B decode step (16 layers of q, k, v, o, gate, up, down, then the LM head;
// bf16 weights, 2.47 GB), launched plainly and replayed as one CUDA graph: ms per step and tok/s bound.

import { f32ToBf16Bits } from "@poot/kernel-dsl";
import { type CudaContext, type DeviceBuffer, type LaunchParams } from "@poot/backend-cuda";
import { gemvRowsBf16, gemvRowsBf16x2, gemvRowsGrid } from "../test/row-gemvs.js";
import { median, rng } from "./gpu-bench.js";

const LAYERS = 16;
const HIDDEN = 2048;
const KV = 512;
const FFN = 8192;
const VOCAB = 128256;
const RUNS = 7;

/** [N, K] of each GEMV of one layer, then the head. */
function shapes(): [number, number][] {
  const layer: [number, number][] = [
    [HIDDEN, HIDDEN],
    [KV, HIDDEN],
    [KV, HIDDEN],
    [HIDDEN, HIDDEN],
    [FFN, HIDDEN],
    [FFN, HIDDEN],
    [HIDDEN, FFN],
  ];
  return [...Array.from({ length: LAYERS }, () => layer).flat(), [VOCAB, HIDDEN]];
}

/** Figures of the decode-step GEMV benchmark. */
export function benchDecodeStep(ctx: CudaContext, copyGBps: number): Record<string, number> {
  const r = rng(11);
  const chunkElems = 1 << 22;
  const chunk = ctx.upload(Uint16Array.from({ length: chunkElems }, () => f32ToBf16Bits((r() * 2 - 1) * 0.05)));
  const x = ctx.upload(Float32Array.from({ length: FFN }, () => r() * 2 - 1));
  const y = ctx.allocate(4 * VOCAB);
  const list = shapes();
  const sg = ctx.caps.subgroupSize ?? 32;
  const k1 = ctx.compile(gemvRowsBf16);
  const k2 = ctx.compile(gemvRowsBf16x2);
  const weights: DeviceBuffer[] = [];
  const launches: { params: LaunchParams; grid: [number, number, number]; k: typeof k1 }[] = [];
  let bytes = 0;
  for (const [N, K] of list) {
    const wb = N * K * 2;
    bytes += wb;
    const w = ctx.allocate(wb);
    for (let off = 0; off < wb; off += chunkElems * 2)
      ctx.device.api.cuMemcpyDtoDAsync(
        w.ptr + BigInt(off),
        chunk.ptr,
        Math.min(chunkElems * 2, wb - off),
        ctx.stream.handle,
      );
    weights.push(w);
    const k = K % 512 === 0 ? k2 : k1;
    launches.push({
      params: k.bind({ buffers: { W: w, x, y }, uniforms: { N, K8: K / 8 } }),
      grid: gemvRowsGrid(N, sg),
      k,
    });
  }
  ctx.synchronize();
  const step = (): void => {
    for (const l of launches) l.k.launch(l.grid, l.params);
  };
  const a = ctx.createEvent();
  const b = ctx.createEvent();
  const plainWall: number[] = [];
  const plainGpu: number[] = [];
  for (let run = 0; run < RUNS + 1; run++) {
    ctx.synchronize();
    const t0 = performance.now();
    a.record(ctx.stream);
    step();
    b.record(ctx.stream);
    b.synchronize();
    const t1 = performance.now();
    if (run > 0) {
      plainWall.push(t1 - t0);
      plainGpu.push(b.elapsedSince(a));
    }
  }
  const graph = ctx.capture(step);
  const graphWall: number[] = [];
  const graphGpu: number[] = [];
  for (let run = 0; run < RUNS + 1; run++) {
    ctx.synchronize();
    const t0 = performance.now();
    a.record(ctx.stream);
    graph.launch(ctx.stream);
    b.record(ctx.stream);
    b.synchronize();
    const t1 = performance.now();
    if (run > 0) {
      graphWall.push(t1 - t0);
      graphGpu.push(b.elapsedSince(a));
    }
  }
  const floorMs = (bytes / (copyGBps * 1e9)) * 1e3;
  graph.dispose();
  for (const l of launches) l.params.dispose();
  for (const buf of [...weights, chunk, x, y]) buf.dispose();
  a.dispose();
  b.dispose();
  ctx.pool.trim();
  const gw = median(graphWall);
  return {
    kernels: list.length,
    weightBytes: bytes,
    plainWallMs: median(plainWall),
    plainGpuMs: median(plainGpu),
    graphWallMs: gw,
    graphGpuMs: median(graphGpu),
    graphTokPerSecBound: 1000 / gw,
    copyFloorMs: floorMs,
    fractionOfFloor: floorMs / gw,
    graphGBps: bytes / (gw * 1e-3) / 1e9,
  };
}

// The device's copy bandwidth, measured: the floor a memory-bound decode step is judged against. A
// device-to-device copy reads and writes every byte, so (read + write) bytes per second is what a kernel that
// streams its weights once could reach at best.

import type { CudaContext } from "./context.js";
import { CudaError } from "./errors.js";

/** Options of {@link measureCopyBandwidth}. */
export interface CopyBandwidthOptions {
  /** Bytes per copy (default 256 MiB: far above the L2, small next to the weights). */
  readonly bytes?: number;
  /** Timed runs after one warm-up; the median is reported (default 5). */
  readonly runs?: number;
  /** Copies per run (default 5). */
  readonly copies?: number;
}

/** Copy bandwidth of a device, from {@link measureCopyBandwidth}. */
export interface CopyBandwidth {
  /** Bytes per copy. */
  readonly bytes: number;
  /** Median (read + write) bytes per second over the runs, in GB/s (1e9). */
  readonly readWriteGBps: number;
  /** Every run's figure, GB/s. */
  readonly runsGBps: readonly number[];
}

/**
 * Times `cuMemcpyDtoDAsync` between two fresh buffers on the context's stream with events and returns the
 * median (read + write) bandwidth. Allocates two `bytes`-byte buffers from the pool and releases them.
 */
export function measureCopyBandwidth(ctx: CudaContext, options: CopyBandwidthOptions = {}): CopyBandwidth {
  const bytes = options.bytes ?? 256 << 20,
    runs = options.runs ?? 5,
    copies = options.copies ?? 5;
  for (const [k, v] of [
    ["bytes", bytes],
    ["runs", runs],
    ["copies", copies],
  ] as const) {
    if (!Number.isInteger(v) || v < 1)
      throw new CudaError("bad-argument", `copy bandwidth: ${k} must be a positive integer, got ${v}`, { value: v });
  }
  const src = ctx.allocate(bytes),
    dst = ctx.allocate(bytes);
  const a = ctx.createEvent(),
    b = ctx.createEvent();
  try {
    src.fill(1, ctx.stream);
    const figures: number[] = [];
    for (let r = 0; r <= runs; r++) {
      a.record(ctx.stream);
      for (let i = 0; i < copies; i++) dst.copyFrom(src, bytes, ctx.stream);
      b.record(ctx.stream);
      b.synchronize();
      if (r > 0) figures.push((2 * bytes * copies) / (b.elapsedSince(a) * 1e-3) / 1e9);
    }
    const sorted = [...figures].sort((x, y) => x - y);
    const m = sorted.length >> 1;
    const median = sorted.length % 2 === 1 ? sorted[m]! : (sorted[m - 1]! + sorted[m]!) / 2;
    return { bytes, readWriteGBps: median, runsGBps: figures };
  } finally {
    a.dispose();
    b.dispose();
    src.dispose();
    dst.dispose();
  }
}

// The bench's own memory-bandwidth probe: `threads` worker_threads each copy a private 64 MiB buffer (memcpy through
// TypedArray.set) for a fixed time; bytes read plus bytes written over wall time is the machine's copy bandwidth.

import { Worker } from "node:worker_threads";

const PROBE = `"use strict";
const { workerData, parentPort } = require("node:worker_threads");
const src = new Float64Array(workerData.bytes / 8).fill(1), dst = new Float64Array(workerData.bytes / 8);
dst.set(src);
const flag = new Int32Array(workerData.go);
Atomics.add(flag, 1, 1);
while (Atomics.load(flag, 0) === 0) Atomics.wait(flag, 0, 0, 10);
let copies = 0;
const t0 = performance.now();
while (performance.now() - t0 < workerData.ms) { dst.set(src); copies++; }
parentPort.postMessage({ bytes: 2 * copies * workerData.bytes, ms: performance.now() - t0 });
`;

/** Measured copy bandwidth: bytes read + written per second over all threads. */
export interface Bandwidth {
  readonly bytesPerSecond: number;
  readonly threads: number;
}

/** Measures the copy bandwidth of `threads` threads copying 64 MiB buffers for about `ms` milliseconds. */
export async function measureBandwidth(threads: number, ms = 600): Promise<Bandwidth> {
  const go = new SharedArrayBuffer(8);
  const flag = new Int32Array(go);
  const bytes = 64 << 20;
  const workers = Array.from(
    { length: threads },
    () => new Worker(PROBE, { eval: true, workerData: { bytes, ms, go } }),
  );
  const done = workers.map(
    (w) =>
      new Promise<{ bytes: number; ms: number }>((resolve, reject) => {
        w.once("message", resolve);
        w.once("error", reject);
      }),
  );
  // Start every thread together once each has touched its buffers, so the copies overlap.
  while (Atomics.load(flag, 1) < threads) await new Promise((r) => setTimeout(r, 5));
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
  const results = await Promise.all(done);
  await Promise.all(workers.map((w) => w.terminate()));
  const total = results.reduce((a, r) => a + r.bytes, 0);
  const wall = Math.max(...results.map((r) => r.ms));
  return { bytesPerSecond: (total / wall) * 1000, threads };
}

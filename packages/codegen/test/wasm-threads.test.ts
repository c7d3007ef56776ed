// The Wasm calling convention on worker_threads: two workers run different workgroups of one launch at the
// same time over one shared memory, each with its own argument block; global atomics must add up.

import { Worker } from "node:worker_threads";
import { describe, expect, test } from "vitest";
import { lowerWasm } from "@poot/codegen";
import { interpret } from "@poot/kernel-dsl";
import { atomics } from "./kernels.js";
import { WASM_CAPS } from "./helpers.js";
import { rng } from "./cases.js";

type Mem = { buffer: SharedArrayBuffer };
const WA = (
  globalThis as unknown as {
    WebAssembly: { Memory: new (d: { initial: number; maximum: number; shared: boolean }) => Mem };
  }
).WebAssembly;

describe("Wasm kernels on worker_threads", () => {
  test("histogram_atomics over 16 workgroups on 2 workers matches the interpreter", async () => {
    const code = lowerWasm(atomics, WASM_CAPS);
    const abi = code.abi!;
    const groups = 16;
    const n = 64 * groups - 5;
    const r = rng(11);
    const vals = Uint32Array.from({ length: 64 * groups }, () => Math.floor(r() * 1000));
    const ref = { vals, hist: new Uint32Array(16), total: new Float32Array(1) };
    interpret(atomics, { grid: [groups], buffers: ref, uniforms: { n }, subgroupSize: 1 });

    // Layout: two argument blocks, the three buffers, then per worker a shared area and a frame area.
    const memory = new WA.Memory({ initial: 4, maximum: 64, shared: true });
    const view = new DataView(memory.buffer);
    const bytes = new Uint8Array(memory.buffer);
    const [args0, args1] = [0, 256];
    const [valsAt, histAt, totalAt] = [1024, 1024 + vals.byteLength, 1024 + vals.byteLength + 64];
    bytes.set(new Uint8Array(vals.buffer), valsAt);
    const perWorker = (k: number): number => 8192 + k * (abi["sharedBytes"]! + 64 * abi["frameBytes"]! + 64);
    for (const [k, at] of [
      [0, args0],
      [1, args1],
    ] as const) {
      [valsAt, histAt, totalAt, n, groups, 1, 1].forEach((w, i) => view.setUint32(at + 4 * i, w, true));
      view.setUint32(at + 28, perWorker(k), true); // shared memory
      view.setUint32(at + 32, perWorker(k) + abi["sharedBytes"]! + 16, true); // frames
    }
    expect(abi["argWords"]).toBe(9);

    const run = (argsAddr: number, ids: number[]): Promise<void> =>
      new Promise((resolve, reject) => {
        const w = new Worker(new URL("./wasm-worker.mjs", import.meta.url), {
          workerData: {
            binary: code.binary,
            memory,
            entry: code.entryPoint,
            argsAddr,
            groups: ids.map((x) => [x, 0, 0]),
            threads: 64,
          },
        });
        w.on("message", () => resolve());
        w.on("error", reject);
      });
    const ids = Array.from({ length: groups }, (_, i) => i);
    await Promise.all([
      run(
        args0,
        ids.filter((i) => i % 2 === 0),
      ),
      run(
        args1,
        ids.filter((i) => i % 2 === 1),
      ),
    ]);

    expect(Array.from(new Uint32Array(memory.buffer, histAt, 16))).toEqual(Array.from(ref.hist));
    const total = new Float32Array(memory.buffer, totalAt, 1)[0]!;
    expect(Math.abs(total - ref.total[0]!) / ref.total[0]!).toBeLessThan(1e-6);
    // Every value < n was counted once.
    expect(ref.hist.reduce((a, b) => a + b, 0)).toBe(n);
  });
});

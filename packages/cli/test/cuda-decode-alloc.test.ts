// A decode step on the CUDA executor allocates no device memory: the demo model through the runtime, each
// single-token step replayed as a CUDA graph, the pool's allocate calls (cuMemAlloc or a reused block) counted
// across steps. The same guard is shown to catch a planted allocation. Skips without a CUDA driver and device;
// on the GPU machine it runs from the bundle `bench/cuda-decode-alloc.gpu.ts` (vitest replaced by a shim).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { CudaError, createCudaExecutor, type CudaExecutor } from "@poot/backend-cuda";
import { Engine, argmax } from "@poot/runtime";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "@poot/testkit";

const DEMO = path.join(REPO_ROOT, "models", "demo");

function cudaAbsent(): string | undefined {
  try {
    createCudaExecutor().dispose();
    return undefined;
  } catch (e) {
    if (e instanceof CudaError && e.code === "no-driver") return e.message;
    throw e;
  }
}
const why = !fs.existsSync(path.join(DEMO, "config.json")) ? "models/demo is absent" : cudaAbsent();

/** Pool allocate calls so far: blocks from cuMemAlloc plus blocks reused from a free list. */
function allocateCalls(exec: CudaExecutor): number {
  const s = exec.device.ctx.pool.stats();
  return s.driverAllocations + s.reuses;
}

/**
 * Prefills, decodes until the step is captured, then counts allocate calls over `steps` more decode steps;
 * `plant` runs inside each counted step (after the replay) to check the guard itself.
 */
function decodeAllocations(
  steps: number,
  plant?: (exec: CudaExecutor) => void,
): { allocations: number; replays: number; dispatches: number } {
  const exec = createCudaExecutor({ cacheDir: path.join(os.tmpdir(), "poot-cuda-cache") });
  const engine = Engine.load(DEMO, { executor: exec, context: 64 });
  try {
    const s = engine.openSession();
    let logits = s.step([1, 2, 3, 4, 5, 6, 7, 8]);
    for (let i = 0; i < 2; i++) logits = s.step([argmax(logits)]);
    const before = allocateCalls(exec),
      replays0 = engine.stats.replays,
      d0 = exec.dispatchesSubmitted();
    for (let i = 0; i < steps; i++) {
      logits = s.step([argmax(logits)]);
      plant?.(exec);
    }
    return {
      allocations: allocateCalls(exec) - before,
      replays: engine.stats.replays - replays0,
      dispatches: exec.dispatchesSubmitted() - d0,
    };
  } finally {
    engine.close();
    exec.dispose();
  }
}

(why === undefined ? describe : describe.skip)(
  `CUDA decode steps allocate nothing${why === undefined ? "" : ` (skipped: ${why})`}`,
  () => {
    it("32 replayed decode steps make no pool allocate call", () => {
      const r = decodeAllocations(32);
      expect(r.replays, "every counted step is a graph replay").toBe(32);
      expect(r.allocations, "allocate calls during decode").toBe(0);
      // `poot bench` reports dispatches per token from this counter: a replay counts its captured launches.
      expect(r.dispatches).toBeGreaterThan(0);
      expect(r.dispatches % 32, "the same launches every replayed step").toBe(0);
    });

    it("the guard sees one planted allocation per step", () => {
      const r = decodeAllocations(4, (exec) => exec.device.ctx.allocate(1024).dispose());
      expect(r.allocations).toBe(4);
    });
  },
);

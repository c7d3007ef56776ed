// The CUDA device greedy loop (decision 2201) on the demo model: Engine.greedy gives transformers' greedy ids
// (models/demo/reference.json) for launch sizes that cross each other and the KV pages, runs on the device (graph
// launches counted, no host step), and a stop inside a launch leaves the session exactly as host steps do (tokens,
// pages, next logits bit for bit). Skips without a CUDA driver and device; on the GPU machine the same checks run
// from the bundle (`bench/cuda-fixtures.gpu.ts` through hf-family.ts, `bench/cuda-greedy.gpu.ts`).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { CudaError, createCudaExecutor } from "@poot/backend-cuda";
import { Engine, greedyArgmax, type EngineOptions } from "@poot/runtime";
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
const why = !fs.existsSync(path.join(DEMO, "reference.json")) ? "models/demo is absent" : cudaAbsent();

describe.skipIf(why !== undefined)(
  `CUDA greedy loop on models/demo${why !== undefined ? ` (skipped: ${why})` : ""}`,
  () => {
    const ref = () =>
      JSON.parse(fs.readFileSync(path.join(DEMO, "reference.json"), "utf8")) as {
        prompt_ids: number[];
        greedy_ids: number[];
      };
    const open = (o: Partial<EngineOptions>) => {
      const executor = createCudaExecutor({ cacheDir: path.join(os.tmpdir(), "poot-cuda-cache") });
      return Engine.load(DEMO, { executor, context: 64, pageSize: 4, ...o });
    };

    it.each([1, 3, 8])("%i steps a launch: transformers' greedy ids, on the device", (K) => {
      const r = ref();
      const e = open({ greedyTokensPerLaunch: K });
      try {
        const s = e.openSession();
        const first = greedyArgmax(s.step(r.prompt_ids));
        const graphs0 = (e.executor.graphLaunchesSubmitted?.() ?? 0) as number;
        const ids = e.greedy(s, first, r.greedy_ids.length - 1);
        expect([first, ...ids]).toEqual(r.greedy_ids);
        expect(e.stats.greedyLaunches).toBe(Math.ceil((r.greedy_ids.length - 1) / K));
        expect((e.executor.graphLaunchesSubmitted?.() ?? 0) - graphs0).toBe(e.stats.greedyLaunches);
        expect(e.stats.replays).toBe(0);
      } finally {
        e.close();
        e.executor.dispose();
      }
    });

    it("a stop inside a launch rolls back exactly (tokens, pages, next logits bit for bit)", () => {
      const r = ref();
      const a = open({ greedyLoop: "steps" }),
        b = open({ greedyTokensPerLaunch: 8 });
      try {
        const stop = (_: number, i: number) => i === 10;
        const sa = a.openSession(),
          sb = b.openSession();
        const ia = a.greedy(sa, greedyArgmax(sa.step(r.prompt_ids)), 20, { stop }),
          ib = b.greedy(sb, greedyArgmax(sb.step(r.prompt_ids)), 20, { stop });
        expect(ib).toEqual(ia);
        // 3 launches of 8 were queued before the first read (3 in flight): 24 steps, 11 held.
        expect(b.stats.greedyRolledBack).toBe(24 - 11);
        expect(sb.tokens).toEqual(sa.tokens);
        expect(sb.pages.length).toBe(sa.pages.length);
        const next = ib[ib.length - 1]!;
        const la = sa.step([next]),
          lb = sb.step([next]);
        expect(Buffer.from(lb.buffer).equals(Buffer.from(la.buffer))).toBe(true);
      } finally {
        for (const e of [a, b]) {
          e.close();
          e.executor.dispose();
        }
      }
    });
  },
);

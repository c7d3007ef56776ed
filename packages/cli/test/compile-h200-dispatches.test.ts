// `poot compile`'s prediction of the launches a decode step submits, against what the H200 counted (issue #16):
// bench-results/2026-12-02-devices-h200.json holds `poot bench`'s dispatches per decode token of the
// Llama-3.2-1B-shaped bf16 model on cuda, vulkan and wgpu (context 16 + 128, pages of 16). The prediction is the
// lowering's `launchesPerStep` (graph-plan's dispatches plus CUDA's split kernels' second launches), not graph-plan's
// `fusedDispatches`, which leaves those out on CUDA (115 against the 211 launched there).
import * as path from "node:path";
import { bufferIo, runCli } from "@poot/cli";
import { fixture, needFixture, readBenchResult, REPO_ROOT } from "@poot/testkit";
import { describe, expect, test } from "vitest";

const WHY = needFixture("configs/llama-3.2-1b.json");
const RECORD = path.join(REPO_ROOT, "bench-results", "2026-12-02-devices-h200.json");

/** The H200's dispatches per decode token of the case `id` (every run of a case counted the same). */
function measured(id: string): number {
  const c = readBenchResult(RECORD).cases.find((x) => x.id === id);
  if (c === undefined) throw new Error(`${RECORD}: no case ${id}`);
  return c.metrics["dispatchesPerToken"]!.median;
}

async function predict(target: string): Promise<{ fusedDispatches: number; launchesPerStep: number }> {
  const io = bufferIo();
  const code = await runCli(
    [
      "compile",
      fixture("configs/llama-3.2-1b.json"),
      "--target",
      target,
      "--mode",
      "decode",
      "--context",
      "144",
      "--page-size",
      "16",
      "--pages",
      "9",
      "--json",
    ],
    { io },
  );
  expect(code, io.stderr()).toBe(0);
  const r = JSON.parse(io.stdout()) as { fusedDispatches: number; lowering: { launchesPerStep: number } };
  return { fusedDispatches: r.fusedDispatches, launchesPerStep: r.lowering.launchesPerStep };
}

describe.skipIf(WHY !== undefined)(
  `poot compile predicts the H200's launches per decode step${WHY ? ` (skipped: ${WHY})` : ""}`,
  () => {
    // Host steps (--decode-loop steps on cuda): the step's launches alone.
    test.each([
      ["cuda", "cuda-bf16-new-steps-cuda-steps-p16g128"],
      ["vulkan", "vulkan-bf16-new-vulkan-steps-p16g128"],
      ["wgpu", "wgpu-bf16-new-wgpu-steps-p16g128"],
    ])("%s: lowering.launchesPerStep = the dispatches counted per token", async (target, id) => {
      const p = await predict(target);
      expect(p.launchesPerStep).toBe(measured(id));
    });

    test("cuda's device greedy loop adds its argmax launch to each step", async () => {
      const p = await predict("cuda");
      expect(measured("cuda-bf16-new-cuda-device-loop-p16g128")).toBe(p.launchesPerStep + 1);
    });

    test("graph-plan's fusedDispatches alone misses CUDA's split kernels (the figure a prediction must not use)", async () => {
      const p = await predict("cuda");
      expect(p.fusedDispatches).not.toBe(measured("cuda-bf16-new-steps-cuda-steps-p16g128"));
      expect(p.fusedDispatches).toBe(measured("vulkan-bf16-new-vulkan-steps-p16g128"));
    });
  },
);

// Dispatches per decode token that `poot bench --backend wgpu|vulkan` counts on the device equal what
// `poot compile --target wgpu|vulkan` predicts for the same model and context (lavapipe in CI). olmoe has
// bind-phase plans (computed once from weights), which must not be launched again per token; qwen35's conv
// state_out is a strided view, which must be stored by copies, not by an extra kernel. bench runs the runtime's
// paged decode graph (qwen35's recurrent states in lane pools: a gather and an update per state), so the
// prediction is compiled for the layout bench reports (decision 0704). The issue #26 families (granite, smollm3, phi4,
// gptoss, deepseek2: fixtures/hf) too: their per-layer counts are printed (decision 2650 lists them).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { probeVulkan } from "@poot/backend-vulkan";
import { nodeGpu } from "@poot/backend-wgpu/node";
import { describe, expect, test } from "vitest";
import { fixture, needFixture, REPO_ROOT } from "@poot/testkit";
import { benchAndCompile } from "./dispatch-counts.js";

const FIX = fixture("hf");
const WORKER = path.resolve(REPO_ROOT, "packages/backend-wgpu/dist/sync-worker.js");
// Tests (not the libraries) pick lavapipe when no ICD is chosen and .ci/lavapipe-setup ran.
const LVP = path.join(os.homedir(), ".cache", "lavapipe25", "lvp_icd.json");
if (process.env.VK_DRIVER_FILES === undefined && fs.existsSync(LVP)) process.env.VK_DRIVER_FILES = LVP;

async function skipReason(backend: "wgpu" | "vulkan"): Promise<string | undefined> {
  const missing = needFixture("hf");
  if (missing !== undefined) return missing;
  if (backend === "vulkan") {
    const p = probeVulkan();
    return p.ok ? undefined : `no Vulkan device: ${p.reason}`;
  }
  if (!fs.existsSync(WORKER))
    return "@poot/backend-wgpu is not built (its device worker runs from dist/): run `pnpm build`";
  try {
    return (await (await nodeGpu()).requestAdapter()) === null
      ? 'no WebGPU adapter (eval "$(bash .ci/lavapipe-setup)" sets up lavapipe)'
      : undefined;
  } catch (e) {
    return `no WebGPU: ${(e as Error).message}`;
  }
}

/** Registers the dispatch-count checks of one backend (one test file per backend: see gpu-fixtures.ts). */
export async function dispatchSuite(backend: "wgpu" | "vulkan"): Promise<void> {
  const skip = await skipReason(backend);
  describe.skipIf(skip !== undefined)(
    `dispatches per decode token on ${backend}${skip !== undefined ? ` (skipped: ${skip})` : ""}`,
    () => {
      for (const fam of ["llama3", "olmoe", "qwen35", "granite", "smollm3", "phi4", "gptoss", "deepseek2"]) {
        test(`${fam}: poot bench counts what poot compile --explain predicts`, async () => {
          const dir = path.join(FIX, fam);
          const { bench, compiled } = await benchAndCompile(dir, backend, [], ["--mode", "decode"]);
          const kvLayout = bench["kvLayout"] as { lanes: number };
          // bench's Engine runs one sequence (lanes 1 = --batch 1) with context = prompt + generated tokens, paged.
          expect(kvLayout.lanes).toBe(1);
          const measured = bench["decodeDispatchesPerToken"] as number | null;
          const predicted = compiled as {
            fusedDispatches: number;
            unfusedDispatches: number;
            dispatchesPerLayer: Record<string, number>;
          };
          console.log(
            `${backend} ${fam}: ${measured} dispatches per decode token, per layer ${JSON.stringify(predicted.dispatchesPerLayer)}`,
          );
          expect(measured).toBe(predicted.fusedDispatches);
          // The fused program really is what runs (fusion removed launches on these models).
          expect(predicted.fusedDispatches).toBeLessThan(predicted.unfusedDispatches);
        }, 300_000);
      }
    },
  );
}

// `--backend wgpu`, `--backend vulkan` and `--backend rocm` (on an AMD GPU only; never run yet) end to end: each fixtures/hf family through the runtime's Engine
// (the fused Program graph-plan compiles for each target) on lavapipe, prefill and per-position decode logits against
// transformers' float64 logits, and the greedy ids. One test file per backend (gpu-fixtures-*.test.ts): Dawn and
// the Vulkan executor each load the Vulkan driver, and in one process on lavapipe that crashed (see the README).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { probeVulkan } from "@poot/backend-vulkan";
import { nodeGpu } from "@poot/backend-wgpu/node";
import { LoadedModel, openSafetensors } from "@poot/models";
import { Engine } from "@poot/runtime";
import { describe, expect, test } from "vitest";
import { createExecutor } from "../src/commands/backends.js";
import { loadGpuModule } from "../src/commands/gpu-modules.js";
import { fixture, needFixture, relErr, argmax, REPO_ROOT } from "@poot/testkit";

const FIX = fixture("hf");
const WORKER = path.resolve(REPO_ROOT, "packages/backend-wgpu/dist/sync-worker.js");

/** Why a GPU test cannot run here, or undefined. Tests may read the environment; the lavapipe ICD is found on disk too. */
export async function skipReason(backend: "wgpu" | "vulkan" | "rocm"): Promise<string | undefined> {
  const missing = needFixture("hf");
  if (missing !== undefined) return missing;
  if (backend === "rocm") {
    // A HIP runtime (ROCM_PATH names the ROCm root) and an AMD GPU the backend builds code objects for.
    const r = await loadGpuModule("rocm");
    if (!r.ok) return r.reason;
    const rocm = await import("@poot/backend-rocm");
    const rocmPath = process.env["ROCM_PATH"];
    try {
      rocm.rocmPlanCaps(rocm.HipRuntime.open(rocmPath === undefined ? {} : { rocmPath }).gcnArchName);
      return undefined;
    } catch (e) {
      return `no ROCm device: ${(e as Error).message}`;
    }
  }
  // .ci/lavapipe-setup's default folder (an older setup's folder as a fallback).
  const mine = path.join(
    process.env["XDG_CACHE_HOME"] ?? path.join(os.homedir(), ".cache"),
    "poot",
    "lavapipe",
    "lavapipe_icd.json",
  );
  const icd =
    process.env["VK_DRIVER_FILES"] ??
    (fs.existsSync(mine) ? mine : path.join(os.homedir(), ".cache", "lavapipe25", "lvp_icd.json"));
  if (process.env["VK_DRIVER_FILES"] === undefined && fs.existsSync(icd)) process.env["VK_DRIVER_FILES"] = icd;
  if (backend === "vulkan") {
    const p = probeVulkan();
    return p.ok ? undefined : `no Vulkan device: ${p.reason}`;
  }
  if (!fs.existsSync(WORKER))
    return "@poot/backend-wgpu is not built (its device worker runs from dist/): run `pnpm build`";
  try {
    if ((await (await nodeGpu()).requestAdapter()) === null)
      return 'no WebGPU adapter (eval "$(bash .ci/lavapipe-setup)" sets up lavapipe)';
  } catch (e) {
    return `no WebGPU: ${(e as Error).message}`;
  }
  return undefined;
}

/** Why the backend's package cannot be used, or undefined once it is loaded (the CLI loads GPU packages on demand, #19). */
export async function loadReason(backend: "wgpu" | "vulkan" | "rocm"): Promise<string | undefined> {
  const r = await loadGpuModule(backend);
  return r.ok ? undefined : r.reason;
}

/** Registers the fixture checks of one backend. */
export async function fixtureSuite(backend: "wgpu" | "vulkan" | "rocm"): Promise<void> {
  const skip = (await skipReason(backend)) ?? (await loadReason(backend));
  const families: [string, string][] = [
    ...(fs.existsSync(FIX)
      ? ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"].map((f): [string, string] => [f, path.join(FIX, f)])
      : []),
    // The issue #26 families: fixtures in the repository (fixtures/hf, see its README).
    ...["granite", "smollm3", "phi4", "gptoss", "deepseek2"].map((f): [string, string] => [f, fixture("hf", f)]),
  ];
  describe.skipIf(skip !== undefined)(
    `poot --backend ${backend} on the fixture families${skip !== undefined ? ` (skipped: ${skip})` : ""}`,
    () => {
      for (const [fam, dir] of families) {
        test(`${fam}: prefill and decode logits within 1e-4 of transformers, greedy ids equal`, () => {
          const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as {
            prompt_ids: number[];
            greedy_ids: number[];
          };
          const full = openSafetensors(path.join(dir, "reference.safetensors")).readF32Sync("full_logits");
          const executor = createExecutor(backend, "test");
          const engine = new Engine(LoadedModel.open(dir, { weights: "f32" }), {
            executor,
            context: 64,
            tokenizer: null,
          });
          try {
            const V = engine.config.vocabSize,
              T = ref.prompt_ids.length;
            const row = (r: number): Float32Array => full.subarray(r * V, (r + 1) * V);
            const pre = engine.openSession();
            expect(relErr(pre.step(ref.prompt_ids), row(T - 1)), "prefill").toBeLessThanOrEqual(1e-4);
            pre.release();
            // Decode one token at a time, fed the reference continuation so every row is comparable.
            const s = engine.openSession();
            let logits: Float32Array = new Float32Array(0);
            for (let t = 0; t < T; t++) {
              logits = s.step([ref.prompt_ids[t]!]);
              expect(relErr(logits, row(t)), `decode position ${t}`).toBeLessThanOrEqual(1e-4);
            }
            const ids: number[] = [];
            for (let g = 0; g < ref.greedy_ids.length; g++) {
              ids.push(argmax(logits));
              if (g + 1 === ref.greedy_ids.length) break;
              logits = s.step([ref.greedy_ids[g]!]);
              expect(relErr(logits, row(T + g)), `decode position ${T + g}`).toBeLessThanOrEqual(1e-4);
            }
            expect(ids).toEqual(ref.greedy_ids);
            s.release();
          } finally {
            engine.close();
            executor.dispose();
          }
        }, 600_000);
      }
    },
  );
}

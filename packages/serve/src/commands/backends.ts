// The backends the CLI can run on, by --backend name, and the bundled demo model that `poot run` uses
// when no MODEL is given (found next to the installed package, never relative to the cwd).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { CudaError, createCudaExecutor, cudaContextOf, measureCopyBandwidth } from "@poot/backend-cuda";
import { createCpuExecutor } from "@poot/backend-cpu";
import { createVulkanExecutor } from "@poot/backend-vulkan";
import { createSyncWgpuExecutor } from "@poot/backend-wgpu/node";
import { type Executor } from "@poot/executor";
import { createEvalExecutor, createInterpExecutor } from "@poot/backend-reference";
import { LoweringCache } from "@poot/executor/lowering";
import type { CompileOptions } from "@poot/graph-plan";
import { CliError } from "../errors.js";

/**
 * Executor factories by backend name, given the compile options of executors that compile (the eval backends
 * ignore them); the CPU and GPU backends join this table as they land.
 */
export const EXECUTORS: Readonly<Record<string, (compile: CompileOptions, cache: LoweringCache | undefined) => Executor>> = {
  // codegen's Wasm SIMD kernels on worker_threads (one per core) over one shared memory; a step is one fused region.
  // Native GEMVs (prebuilt, decision 0952) serve the contractions they can; POOT_CPU_NATIVE=0 runs Wasm only.
  cpu: (compile) => createCpuExecutor({ compile, native: process.env["POOT_CPU_NATIVE"] !== "0" }),
  eval: () => createEvalExecutor(),
  // The literal oracle: graph-ir's `evaluate` every step, nothing folded (slow; for checking and baselines).
  "eval-reference": () => createEvalExecutor({ foldWeights: false }),
  // Every graph compiled by graph-plan for the cpu target and each plan's kernel run in the kernel-dsl interpreter
  // (very slow; checks the whole Program: plans, buffers, synthesized and imported kernels).
  interp: (compile) => createInterpExecutor({ compile }),
  // Vulkan through libvulkan.so.1; the loader picks the driver (VK_DRIVER_FILES selects one, e.g. lavapipe).
  vulkan: (compile, cache) => createVulkanExecutor({ compile, ...(cache !== undefined ? { cache } : {}) }),
  // WebGPU through Dawn (the Vulkan loader finds drivers through VK_DRIVER_FILES, e.g. lavapipe): the fused
  // Program graph-plan compiles for the device's wgpu target (decision 0702).
  wgpu: (compile) => createSyncWgpuExecutor({ executor: { compile } }),
  // NVIDIA GPUs through the CUDA driver (libcuda.so.1 via koffi; no toolkit needed). Decode steps replay as CUDA
  // graphs; JIT-compiled kernels are cached on disk under the OS temp folder.
  cuda: (compile, cache) => createCudaExecutor({ cacheDir: path.join(os.tmpdir(), "poot-cuda-cache"), compile, ...(cache !== undefined ? { cache } : {}) }),
};

/**
 * The lowering cache of the CLI: `$POOT_CACHE_DIR`, else `$XDG_CACHE_HOME/poot`, else `~/.cache/poot` (folder
 * `lowered`); none when `POOT_CACHE_DIR` is `off`. Warnings (a corrupted entry rebuilt) go to `warn`.
 */
export function loweringCache(warn: (message: string) => void): LoweringCache | undefined {
  const dir = process.env["POOT_CACHE_DIR"] ?? path.join(process.env["XDG_CACHE_HOME"] ?? path.join(os.homedir(), ".cache"), "poot");
  return dir === "off" ? undefined : new LoweringCache({ dir: path.join(dir, "lowered"), warn });
}

/**
 * A fresh executor for `--backend name` (compiling with `compile`; lowering through `cache` on the backends that
 * run the shared staged program), or a CliError listing the available ones.
 */
export function createExecutor(name: string, command: string, compile: CompileOptions = {}, cache?: LoweringCache): Executor {
  const make = EXECUTORS[name];
  if (make === undefined) throw new CliError("bad-input", `unknown backend "${name}" (available: ${Object.keys(EXECUTORS).join(", ")})`, { command });
  try {
    return make(compile, cache);
  } catch (err) {
    if (err instanceof CudaError && err.code === "no-driver") throw new CliError("command-failed", `--backend ${name} needs an NVIDIA GPU and its driver (libcuda.so.1): ${err.message}`, { command });
    throw err;
  }
}

/**
 * The executor's device copy bandwidth in GB/s, (read + write) bytes per second of a device-to-device copy,
 * measured now; null for backends without a way to measure it (host executors, Vulkan, WebGPU).
 */
export function measureFloorBandwidth(executor: Executor): number | null {
  const ctx = cudaContextOf(executor);
  return ctx === null ? null : measureCopyBandwidth(ctx).readWriteGBps;
}

/** The repository's `models/demo`, found by walking up from this module's file; null when absent. */
export function findDemoModel(from: string = path.dirname(fileURLToPath(import.meta.url))): string | null {
  let dir = from;
  for (;;) {
    const candidate = path.join(dir, "models", "demo");
    if (fs.existsSync(path.join(candidate, "config.json"))) return candidate;
    const up = path.dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

/** The `--horizontal-fusion` flag as a compile option (decision 0402), or a CliError naming the choices. */
export function horizontalFusion(text: string | undefined, command: string): CompileOptions {
  if (text === undefined) return {};
  if (text !== "grouped" && text !== "shared-epilogue") throw new CliError("bad-input", `--horizontal-fusion must be grouped or shared-epilogue, got "${text}"`, { command });
  return { horizontalFusion: text };
}

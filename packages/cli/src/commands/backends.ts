// The backends the CLI can run on, by --backend name, and the bundled demo model that `poot run` uses
// when no MODEL is given (found next to the installed package, never relative to the cwd).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { createCpuExecutor } from "@poot/backend-cpu";
import { demoModelDir } from "@poot/demo-model";
import { createEvalExecutor, createInterpExecutor } from "@poot/backend-reference";
import type { Executor } from "@poot/executor";
import { LoweringCache } from "@poot/executor/lowering";
import type { CompileOptions } from "@poot/graph-plan";
import { parseNumerics, type CpuNumerics } from "@poot/serve";
import { CliError } from "../errors.js";
import { gpuModule, isGpuBackend, loadGpuModule, loadedGpuModule } from "./gpu-modules.js";

/** Settings the CLI's flags give the executors it makes (`-t, --threads` and `--numerics` for the CPU backend). */
export const executorSettings: { threads?: number; numerics?: CpuNumerics } = {};

/**
 * Reads `--numerics` (or, absent, `POOT_CPU_NUMERICS`) into {@link executorSettings}, checked by `parseNumerics`.
 */
export function setNumerics(value: string | undefined, command: string): void {
  const v = parseNumerics(value, command);
  if (v !== undefined) executorSettings.numerics = v;
}

/**
 * Executor factories by backend name, given the compile options of executors that compile (the eval backends
 * ignore them). The GPU backends are optional packages: their modules are imported by {@link loadBackend} first.
 */
export const EXECUTORS: Readonly<
  Record<string, (compile: CompileOptions, cache: LoweringCache | undefined) => Executor>
> = {
  // codegen's Wasm SIMD kernels on worker_threads (one per core) over one shared memory; a step is one fused region.
  // Native GEMVs (prebuilt from the kernel IR, decisions 2300 and 2310) serve the contractions they can;
  // POOT_CPU_NATIVE=0 runs Wasm only.
  // Weights are mapped from their file (decision 1620); POOT_CPU_MMAP=0 reads them instead.
  cpu: (compile, cache) =>
    createCpuExecutor({
      compile,
      ...(cache !== undefined ? { cache } : {}),
      native: process.env["POOT_CPU_NATIVE"] !== "0",
      mapWeights: process.env["POOT_CPU_MMAP"] !== "0",
      ...(executorSettings.threads === undefined ? {} : { threads: executorSettings.threads }),
      // --numerics fast (decision 2320); POOT_CPU_NUMERICS carries it into serve's engine worker.
      numerics: executorSettings.numerics ?? (process.env["POOT_CPU_NUMERICS"] === "fast" ? "fast" : "exact"),
    }),
  eval: () => createEvalExecutor(),
  // The literal oracle: graph-ir's `evaluate` every step, nothing folded (slow; for checking and baselines).
  "eval-reference": () => createEvalExecutor({ foldWeights: false }),
  // Every graph compiled by graph-plan for the cpu target and each plan's kernel run in the kernel-dsl interpreter
  // (very slow; checks the whole Program: plans, buffers, synthesized and imported kernels).
  interp: (compile) => createInterpExecutor({ compile }),
  // Vulkan through libvulkan.so.1; the loader picks the driver (VK_DRIVER_FILES selects one, e.g. lavapipe).
  vulkan: (compile, cache) =>
    gpuModule("vulkan").createVulkanExecutor({ compile, ...(cache !== undefined ? { cache } : {}) }),
  // WebGPU through Dawn (the Vulkan loader finds drivers through VK_DRIVER_FILES, e.g. lavapipe): the fused
  // Program graph-plan compiles for the device's wgpu target (decision 0702).
  wgpu: (compile, cache) =>
    gpuModule("wgpu").createSyncWgpuExecutor({ executor: { compile }, ...(cache !== undefined ? { cache } : {}) }),
  // NVIDIA GPUs through the CUDA driver (libcuda.so.1 via koffi; no toolkit needed). Decode steps replay as CUDA
  // graphs; JIT-compiled kernels are cached on disk under the OS temp folder.
  cuda: (compile, cache) =>
    gpuModule("cuda").createCudaExecutor({
      cacheDir: path.join(os.tmpdir(), "poot-cuda-cache"),
      compile,
      ...(cache !== undefined ? { cache } : {}),
    }),
  // AMD GPUs through HIP (libamdhip64 via koffi; ROCM_PATH names the ROCm root): code objects built for the GPU's
  // gcnArchName with ROCm's llc + ld.lld (or LLVM 19's), decode steps replayed as HIP graphs. Not yet run on hardware.
  rocm: (compile, cache) => {
    const rocmPath = process.env["ROCM_PATH"];
    return gpuModule("rocm").createRocmExecutor({
      compile,
      ...(rocmPath !== undefined ? { rocmPath } : {}),
      ...(cache !== undefined ? { cache } : {}),
    });
  },
};

/** Every `--backend` value: `auto` and the names of {@link EXECUTORS}. */
export const BACKEND_NAMES: readonly string[] = ["auto", ...Object.keys(EXECUTORS)];

/** Imports the package of a GPU backend (no-op for the others); a CliError naming the package when it is absent. */
export async function loadBackend(name: string, command: string): Promise<void> {
  if (!isGpuBackend(name)) return;
  const r = await loadGpuModule(name);
  if (!r.ok) throw new CliError("command-failed", `--backend ${name}: ${r.reason}`, { command });
}

/**
 * The lowering cache of the CLI: `$POOT_CACHE_DIR`, else `$XDG_CACHE_HOME/poot`, else `~/.cache/poot` (folder
 * `lowered`); none when `POOT_CACHE_DIR` is `off`. Warnings (a corrupted entry rebuilt) go to `warn`.
 */
export function loweringCache(warn: (message: string) => void): LoweringCache | undefined {
  const dir =
    process.env["POOT_CACHE_DIR"] ??
    path.join(process.env["XDG_CACHE_HOME"] ?? path.join(os.homedir(), ".cache"), "poot");
  return dir === "off" ? undefined : new LoweringCache({ dir: path.join(dir, "lowered"), warn });
}

/**
 * A fresh executor for `--backend name` (compiling with `compile`; lowering through `cache` on the backends that
 * run the shared staged program), or a CliError listing the available ones.
 */
export function createExecutor(
  name: string,
  command: string,
  compile: CompileOptions = {},
  cache?: LoweringCache,
): Executor {
  const make = EXECUTORS[name];
  if (make === undefined)
    throw new CliError(
      "bad-input",
      `unknown backend "${name}" (available: ${BACKEND_NAMES.join(", ")}; \`poot backends\` shows which work here)`,
      { command },
    );
  try {
    return make(compile, cache);
  } catch (err) {
    throw backendFailure(name, command, err);
  }
}

/**
 * A backend's failure as a one-line CliError saying what is wrong and what to do (missing package, no driver,
 * no device or adapter, device lost, out of memory); errors that are not a backend's come back unchanged.
 */
export function backendFailure(name: string, command: string, err: unknown): unknown {
  if (err instanceof CliError || !(err instanceof Error)) return err;
  const code = (err as { code?: unknown }).code;
  const result = (err as { context?: { result?: unknown } }).context?.result;
  const fail = (what: string, todo: string) =>
    new CliError("command-failed", `--backend ${name}: ${what} (${err.message.split("\n")[0]}); ${todo}`, { command });
  switch (err.name) {
    case "CudaError":
      if (code === "no-driver")
        return fail(
          "needs an NVIDIA GPU and its driver (libcuda.so.1)",
          "install the NVIDIA driver or use --backend cpu",
        );
      if (result === 2) return fail("the GPU is out of memory", "use a smaller model or --context, or --backend cpu");
      return fail("the CUDA driver failed", "check `nvidia-smi`, or use --backend cpu");
    case "RocmError":
      if (code === "no_runtime")
        return fail(
          "needs an AMD GPU and the ROCm runtime (libamdhip64)",
          "install ROCm (ROCM_PATH names its root) or use --backend cpu",
        );
      if (code === "no_device") return fail("no AMD GPU", "check `rocminfo`, or use --backend cpu");
      if (code === "no_code_object")
        return fail("this AMD GPU is not one the ROCm backend builds for", "use --backend vulkan or cpu");
      if (code === "no_toolchain")
        return fail(
          "needs llc and ld.lld to build code objects",
          "install ROCm's LLVM or LLVM 19, or use --backend cpu",
        );
      if (code === "bad_code_object" || code === "kernarg_mismatch")
        return fail("a kernel could not be built or bound for this GPU", "report it, or use --backend vulkan or cpu");
      if (result === 2) return fail("the GPU is out of memory", "use a smaller model or --context, or --backend cpu");
      return fail("the HIP runtime failed", "use --backend cpu");
    case "VulkanError":
      if (code === "loader-missing" || /INCOMPATIBLE_DRIVER/.test(err.message))
        return fail(
          "no Vulkan loader (libvulkan.so.1)",
          "install libvulkan1 and a Vulkan driver, or use --backend cpu",
        );
      if (code === "no-device")
        return fail("no Vulkan device", "install a Vulkan driver (VK_DRIVER_FILES selects one), or use --backend cpu");
      if (code === "device-lost")
        return fail("the Vulkan device was lost", "run again; if it repeats, update the driver or use --backend cpu");
      if (code === "out-of-memory" || code === "no-memory-type")
        return fail("the device is out of memory", "use a smaller model or --context, or --backend cpu");
      return fail("Vulkan failed", "use --backend cpu");
    case "WgpuError":
      if (code === "no-webgpu")
        return fail(
          "WebGPU (the optional `webgpu` package) is not available",
          "npm install webgpu, or use --backend cpu",
        );
      if (code === "no-adapter")
        return fail("no WebGPU adapter", "install a GPU driver (Vulkan on Linux), or use --backend cpu");
      if (code === "device-lost") return fail("the WebGPU device was lost", "run again, or use --backend cpu");
      if (code === "out-of-memory" || code === "limit-exceeded")
        return fail(
          "the device is out of memory or over its limits",
          "use a smaller model or --context, or --backend cpu",
        );
      return fail("WebGPU failed", "use --backend cpu");
    case "CpuError":
      if (code === "out-of-memory") return fail("out of memory", "use a smaller model or --context");
      if (code === "unsupported-platform") return fail("this platform cannot run it", "use --backend eval");
      return err;
    // @poot/executor's device errors (any backend on the generic staged program).
    case "DeviceError":
      if (code === "out-of-memory")
        return fail("the GPU is out of memory", "use a smaller model or --context, or --backend cpu");
      if (code === "device-lost") return fail("the GPU was lost", "run again; if it repeats, use --backend cpu");
      if (code === "bad-code") return fail("the device refused a kernel", "report it, or use --backend cpu");
      return err;
    // The runtime's and the model loaders' typed errors are about the user's input (token ids, sampling, files).
    case "RuntimeError":
    case "ModelError":
      return new CliError("bad-input", err.message, { command });
    default:
      return err;
  }
}

/**
 * The executor's device copy bandwidth in GB/s, (read + write) bytes per second of a device-to-device copy,
 * measured now; null for backends without a way to measure it (host executors, Vulkan, WebGPU).
 */
export function measureFloorBandwidth(executor: Executor): number | null {
  const cuda = loadedGpuModule("cuda");
  const ctx = cuda === undefined ? null : cuda.cudaContextOf(executor);
  return ctx === null ? null : cuda!.measureCopyBandwidth(ctx).readWriteGBps;
}

/**
 * The demo model: `@poot/demo-model`'s folder when that package is installed with its files, else the repository's
 * `models/demo`, found by walking up from `from` (this module's folder); null when neither is there.
 */
export function findDemoModel(from: string = path.dirname(fileURLToPath(import.meta.url))): string | null {
  if (from === path.dirname(fileURLToPath(import.meta.url)) && demoModelDir !== null) return demoModelDir;
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
  if (text !== "grouped" && text !== "shared-epilogue")
    throw new CliError("bad-input", `--horizontal-fusion must be grouped or shared-epilogue, got "${text}"`, {
      command,
    });
  return { horizontalFusion: text };
}

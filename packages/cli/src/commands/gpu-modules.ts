// The GPU backends are optional dependencies of the CLI: their packages are imported on demand, so `poot`
// runs (on the CPU) where one is not installed, and says which package is missing when it is asked for.
import { CliError } from "../errors.js";

type CudaModule = typeof import("@poot/backend-cuda");
type RocmModule = typeof import("@poot/backend-rocm");
type VulkanModule = typeof import("@poot/backend-vulkan");
type WgpuModule = typeof import("@poot/backend-wgpu/node");

/** The package each GPU backend lives in. */
export const GPU_PACKAGES = {
  cuda: "@poot/backend-cuda",
  rocm: "@poot/backend-rocm",
  vulkan: "@poot/backend-vulkan",
  wgpu: "@poot/backend-wgpu",
} as const;

/** A GPU backend name. */
export type GpuBackend = keyof typeof GPU_PACKAGES;

interface GpuModules {
  cuda: CudaModule;
  rocm: RocmModule;
  vulkan: VulkanModule;
  wgpu: WgpuModule;
}

const loaded: Partial<GpuModules> = {};

/** Whether `name` is a GPU backend (an optional package). */
export function isGpuBackend(name: string): name is GpuBackend {
  return Object.hasOwn(GPU_PACKAGES, name);
}

/** The package a module-not-found error names, or null when it is not one. */
function missingPackage(err: unknown): string | null {
  if (!(err instanceof Error) || (err as { code?: unknown }).code !== "ERR_MODULE_NOT_FOUND") return null;
  const m = /Cannot find (?:package|module) '([^']+)'/.exec(err.message);
  return m?.[1] ?? "a dependency";
}

/** The result of {@link loadGpuModule}: loaded, or why not (a missing package, said as what to install). */
export type GpuLoad = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** Imports a GPU backend's package once; says which package to install when it (or what it needs) is absent. */
export async function loadGpuModule(name: GpuBackend): Promise<GpuLoad> {
  if (loaded[name] !== undefined) return { ok: true };
  try {
    if (name === "cuda") loaded.cuda = await import("@poot/backend-cuda");
    else if (name === "rocm") loaded.rocm = await import("@poot/backend-rocm");
    else if (name === "vulkan") loaded.vulkan = await import("@poot/backend-vulkan");
    else loaded.wgpu = await import("@poot/backend-wgpu/node");
    return { ok: true };
  } catch (err) {
    const pkg = missingPackage(err);
    if (pkg === null) throw err;
    return {
      ok: false,
      reason: `the package ${pkg} is not installed (npm install ${pkg === "a dependency" ? GPU_PACKAGES[name] : pkg})`,
    };
  }
}

/** A loaded GPU backend's module; throws a CliError when {@link loadGpuModule} has not loaded it. */
export function gpuModule<K extends GpuBackend>(name: K): GpuModules[K] {
  const mod = loaded[name];
  if (mod === undefined)
    throw new CliError("command-failed", `--backend ${name}: the package ${GPU_PACKAGES[name]} is not loaded`);
  return mod as GpuModules[K];
}

/** A GPU backend's module when loaded, else undefined. */
export function loadedGpuModule<K extends GpuBackend>(name: K): GpuModules[K] | undefined {
  return loaded[name] as GpuModules[K] | undefined;
}

// The Node entry: a `navigator.gpu`-shaped `GPU` from Dawn (the optional `webgpu` npm package), and the
// synchronous Executor whose device lives in a worker thread. Browsers use `navigator.gpu` and never load it.

import { WgpuError } from "./errors.js";

/** Options of {@link nodeGpu}. */
export interface NodeGpuOptions {
  /**
   * Vulkan ICD manifest(s) for the Vulkan loader (e.g. lavapipe's `lvp_icd.json`). The loader reads them
   * only from the process environment, so when given this sets `VK_DRIVER_FILES` before Dawn starts;
   * the library never reads the environment itself.
   */
  readonly vulkanDriverFiles?: string;
  /** Dawn backend (`vulkan`, `metal`, `d3d12`, `null`, ...); default: Dawn's choice. */
  readonly backend?: string;
  /** Further Dawn flags (`enable-dawn-features=...`, `disable-dawn-features=...`). */
  readonly dawnFlags?: readonly string[];
}

/**
 * Starts Dawn and returns its `GPU`. Also installs Dawn's WebGPU globals (`GPUBufferUsage`, the error
 * classes, ...) on `globalThis`, as a browser has them. Throws `no-webgpu` when the package is absent.
 */
export async function nodeGpu(options: NodeGpuOptions = {}): Promise<GPU> {
  let mod: { create(flags: string[]): GPU; globals: Record<string, unknown> };
  try {
    // An optional peer: absent means "no WebGPU here", a typed error rather than a crash.
    mod = (await import("webgpu")) as unknown as typeof mod;
  } catch (e) {
    throw new WgpuError("no-webgpu", `the optional 'webgpu' package (Dawn) is not installed: ${String(e)}`, {
      operation: "nodeGpu",
    });
  }
  if (options.vulkanDriverFiles !== undefined) process.env["VK_DRIVER_FILES"] = options.vulkanDriverFiles;
  Object.assign(globalThis, mod.globals);
  const flags = [
    ...(options.backend !== undefined ? [`backend=${options.backend}`] : []),
    ...(options.dawnFlags ?? []),
  ];
  try {
    return mod.create(flags);
  } catch (e) {
    throw new WgpuError("no-webgpu", `Dawn failed to start: ${String(e)}`, { operation: "nodeGpu" });
  }
}

export { createSyncWgpuExecutor } from "./sync/client.js";
export type { SyncWgpuExecutor, SyncWgpuOptions } from "./sync/client.js";
export type { OpenOptions } from "./sync/protocol.js";

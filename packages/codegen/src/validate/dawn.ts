// Opens a WebGPU device through Dawn (the optional `webgpu` npm package) and validates WGSL with Tint.
// Validation is `createShaderModule` + `getCompilationInfo()`: any error message means Tint rejected it.

// Kept in the emitted .d.ts (preserve): its GPU* types are @webgpu/types' globals, a dependency of this package.
/// <reference types="@webgpu/types" preserve="true" />

import type { ValidationResult } from "./result.js";

/** Options for opening a Dawn device. */
export interface DawnOptions {
  /**
   * Vulkan ICD manifest(s) for the Vulkan loader (e.g. lavapipe's `lvp_icd.json`). The loader only
   * reads these from the process environment, so when given, this sets `VK_DRIVER_FILES` before
   * Dawn starts; the library never reads the environment itself.
   */
  readonly vulkanDriverFiles?: string;
  /** Dawn backend (`vulkan`, `metal`, `d3d12`, `null`...); default: Dawn's choice. */
  readonly backend?: string;
}

/** An open Dawn device, with the features it was granted. */
export interface DawnDevice {
  /** The WebGPU device. */
  readonly device: GPUDevice;
  /** Adapter description (vendor/architecture/device), for messages. */
  readonly adapterName: string;
  /** Whether `shader-f16` was enabled. */
  readonly f16: boolean;
  /** Whether `subgroups` was enabled. */
  readonly subgroups: boolean;
  /** The adapter's subgroup size range (equal bounds mean a fixed size), when reported. */
  readonly subgroupSizes?: readonly [number, number];
  /** Releases the device. */
  dispose(): void;
}

/** Either an open device or why none could be opened. */
export type DawnOpenResult =
  | { readonly ok: true; readonly dawn: DawnDevice }
  | { readonly ok: false; readonly reason: string };

/** Dawn instances of open devices: collecting the instance while its device runs crashes Dawn. */
const liveInstances = new Set<object>();

/** Opens a device, requesting `shader-f16` and `subgroups` when the adapter offers them. */
export async function openDawnDevice(options: DawnOptions = {}): Promise<DawnOpenResult> {
  let mod: { create(flags: string[]): GPU; globals: Record<string, unknown> };
  try {
    // The package is an optional peer: absent means "no WebGPU here", not an error.
    mod = (await import("webgpu")) as unknown as typeof mod;
  } catch (e) {
    return { ok: false, reason: `the optional 'webgpu' package is not installed (${String(e)})` };
  }
  if (options.vulkanDriverFiles !== undefined) process.env["VK_DRIVER_FILES"] = options.vulkanDriverFiles;
  // Dawn's objects are checked with `instanceof` against these globals (GPUBufferUsage, ...).
  Object.assign(globalThis, mod.globals);
  const flags = options.backend !== undefined ? [`backend=${options.backend}`] : [];
  let gpu: GPU;
  try {
    gpu = mod.create(flags);
  } catch (e) {
    return { ok: false, reason: `Dawn failed to start: ${String(e)}` };
  }
  const adapter = await gpu.requestAdapter();
  if (adapter === null)
    return { ok: false, reason: "Dawn found no adapter (a Vulkan driver such as lavapipe is needed)" };
  const want: GPUFeatureName[] = [];
  const f16 = adapter.features.has("shader-f16");
  const subgroups = adapter.features.has("subgroups" as GPUFeatureName);
  if (f16) want.push("shader-f16");
  if (subgroups) want.push("subgroups" as GPUFeatureName);
  const device = await adapter.requestDevice({ requiredFeatures: want });
  const keep = { gpu, adapter };
  liveInstances.add(keep);
  const info = adapter.info as GPUAdapterInfo & { subgroupMinSize?: number; subgroupMaxSize?: number };
  return {
    ok: true,
    dawn: {
      device,
      adapterName: `${info.vendor} ${info.architecture} ${info.device} ${info.description}`.trim(),
      f16,
      subgroups,
      ...(info.subgroupMinSize !== undefined && info.subgroupMaxSize !== undefined
        ? { subgroupSizes: [info.subgroupMinSize, info.subgroupMaxSize] as const }
        : {}),
      dispose: () => {
        device.destroy();
        liveInstances.delete(keep);
      },
    },
  };
}

/** Compiles WGSL with Tint on `device`; returns Tint's error messages when any. */
export async function validateWgsl(device: GPUDevice, source: string): Promise<ValidationResult> {
  // Error scopes are one stack per device: overlapping validations would pop each other's errors, so each
  // device validates one module at a time, in call order.
  const prev = queues.get(device) ?? Promise.resolve();
  const run = prev.then(() => validateOne(device, source));
  queues.set(
    device,
    run.then(
      () => undefined,
      () => undefined,
    ),
  );
  return run;
}

/** The last validation queued on each device. */
const queues = new WeakMap<GPUDevice, Promise<void>>();

async function validateOne(device: GPUDevice, source: string): Promise<ValidationResult> {
  const tool = "tint (dawn)";
  device.pushErrorScope("validation");
  const module = device.createShaderModule({ code: source });
  const info = await module.getCompilationInfo();
  const scopeError = await device.popErrorScope();
  const errors = info.messages.filter((m) => m.type === "error").map((m) => `${m.lineNum}:${m.linePos}: ${m.message}`);
  if (errors.length > 0) return { status: "invalid", tool, message: errors.join("\n") };
  if (scopeError !== null) return { status: "invalid", tool, message: scopeError.message };
  return { status: "ok", tool };
}

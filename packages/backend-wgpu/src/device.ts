// Adapter and device selection on any `navigator.gpu`-shaped object (Dawn in Node, the browser's own),
// requesting the features and limits poot's kernels use, plus device-loss tracking and typed error scopes.

// Kept in the emitted .d.ts (preserve): its GPU* types are @webgpu/types' globals, a dependency of this package.
/// <reference types="@webgpu/types" preserve="true" />

import { capsOf, type WgpuCaps } from "./caps.js";
import { WgpuError, type WgpuErrorCode } from "./errors.js";

/** How much a feature is wanted: fail without it, use it when offered, or never ask. */
export type FeatureWish = "require" | "prefer" | "off";

/** Options of {@link requestWgpuDevice}. */
export interface WgpuDeviceOptions {
  /** Adapter preference (default: the implementation's choice). */
  readonly powerPreference?: GPUPowerPreference;
  /** Ask for the fallback (software) adapter. */
  readonly forceFallbackAdapter?: boolean;
  /** `shader-f16` (default `"prefer"`). */
  readonly f16?: FeatureWish;
  /** `subgroups` (default `"prefer"`). */
  readonly subgroups?: FeatureWish;
  /** `timestamp-query` (default `"prefer"`). */
  readonly timestamps?: FeatureWish;
  /**
   * Minimum limits the caller needs (e.g. `{ maxStorageBuffersPerShaderStage: 10 }`); an adapter below
   * them is a `limit-exceeded` error. Compute limits are always raised to the adapter's best anyway.
   */
  readonly minLimits?: Readonly<Record<string, number>>;
  /** A label for the device (shows in Dawn's messages). */
  readonly label?: string;
}

// The limits poot's kernels and buffers lean on; each is requested at the adapter's maximum.
const RAISED_LIMITS = [
  "maxStorageBuffersPerShaderStage",
  "maxComputeInvocationsPerWorkgroup",
  "maxComputeWorkgroupSizeX",
  "maxComputeWorkgroupSizeY",
  "maxComputeWorkgroupSizeZ",
  "maxComputeWorkgroupStorageSize",
  "maxComputeWorkgroupsPerDimension",
  "maxStorageBufferBindingSize",
  "maxBufferSize",
  "maxUniformBufferBindingSize",
] as const;
// Alignment limits are better when lower; requested at the adapter's (lowest) value.
const LOWERED_LIMITS = ["minStorageBufferOffsetAlignment", "minUniformBufferOffsetAlignment"] as const;

function limitOf(limits: GPUSupportedLimits, name: string): number | undefined {
  const v = (limits as unknown as Record<string, unknown>)[name];
  return typeof v === "number" ? v : undefined;
}

/**
 * An open WebGPU device with its measured caps. Keeps its `GPU` and adapter alive (Dawn crashes when the
 * instance is collected under a live device) and turns device loss and error scopes into {@link WgpuError}s.
 */
export class WgpuDevice {
  /** The WebGPU device. */
  readonly device: GPUDevice;
  /** Its adapter. */
  readonly adapter: GPUAdapter;
  /** What it can do. */
  readonly caps: WgpuCaps;
  /** Resolves with a `device-lost` error when the device is lost (including by {@link dispose}). */
  readonly lost: Promise<WgpuError>;
  /** The `GPU` object it was opened from (held so that Dawn's instance outlives the device). */
  readonly gpu: GPU;
  #lostError: WgpuError | null = null;
  #disposed = false;

  constructor(gpu: GPU, adapter: GPUAdapter, device: GPUDevice) {
    this.gpu = gpu;
    this.adapter = adapter;
    this.device = device;
    this.caps = capsOf(adapter, device);
    this.lost = device.lost.then((info) => {
      const err = new WgpuError("device-lost", `the WebGPU device was lost (${info.reason}): ${info.message}`, {
        reason: String(info.reason),
      });
      this.#lostError = err;
      return err;
    });
  }

  /** Whether the device has been lost or disposed. */
  get isLost(): boolean {
    return this.#lostError !== null || this.#disposed;
  }

  /** Throws `device-lost` (or `disposed`) when the device cannot take work; call before encoding. */
  assertAlive(operation: string): void {
    if (this.#disposed) throw new WgpuError("disposed", `${operation} on a disposed device`, { operation });
    if (this.#lostError !== null)
      throw new WgpuError("device-lost", `${operation}: ${this.#lostError.message}`, {
        operation,
        ...(this.#lostError.context.reason !== undefined ? { reason: this.#lostError.context.reason } : {}),
      });
  }

  /**
   * Runs `fn` inside out-of-memory, validation and internal error scopes and throws the first error they
   * caught as a typed {@link WgpuError} (the value of `fn` otherwise).
   */
  async scoped<T>(
    operation: string,
    fn: () => T | Promise<T>,
    context: { kernel?: string; hash?: string } = {},
  ): Promise<T> {
    this.assertAlive(operation);
    const d = this.device;
    d.pushErrorScope("out-of-memory");
    d.pushErrorScope("validation");
    d.pushErrorScope("internal");
    let value: T;
    try {
      value = await fn();
    } finally {
      // Pop all three even when fn threw, so scopes never leak onto the next operation.
      const [internal, validation, oom] = [await d.popErrorScope(), await d.popErrorScope(), await d.popErrorScope()];
      const first = oom ?? validation ?? internal;
      if (first !== null) {
        // eslint-disable-next-line no-unsafe-finally -- the scope's error explains fn's failure better.
        throw toWgpuError(first, operation, context);
      }
    }
    return value;
  }

  /** Destroys the device; the device and everything made on it are unusable afterwards. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.device.destroy();
  }
}

/** Maps a WebGPU error object to a typed error with the operation it happened in. */
export function toWgpuError(
  e: GPUError,
  operation: string,
  context: { kernel?: string; hash?: string } = {},
): WgpuError {
  const code: WgpuErrorCode = isA(e, "GPUOutOfMemoryError")
    ? "out-of-memory"
    : isA(e, "GPUInternalError")
      ? "internal"
      : "validation";
  return new WgpuError(code, `${operation}: ${e.message}`, { operation, ...context });
}

// The error classes are globals in browsers and after `nodeGpu()`; the constructor name is the fallback.
function isA(e: GPUError, cls: "GPUOutOfMemoryError" | "GPUInternalError"): boolean {
  const ctor = (globalThis as Record<string, unknown>)[cls];
  return (typeof ctor === "function" && e instanceof ctor) || e.constructor.name === cls;
}

function wish(w: FeatureWish | undefined): FeatureWish {
  return w ?? "prefer";
}

/**
 * Picks an adapter from `gpu` (`navigator.gpu`, or `nodeGpu()` from `@poot/backend-wgpu/node`) and opens a
 * device with the features and limits poot needs; its `caps` report what was granted.
 */
export async function requestWgpuDevice(gpu: GPU | undefined, options: WgpuDeviceOptions = {}): Promise<WgpuDevice> {
  if (gpu === undefined || gpu === null)
    throw new WgpuError("no-webgpu", "this environment offers no WebGPU (no navigator.gpu)", {
      operation: "requestAdapter",
    });
  const adapter = await gpu.requestAdapter({
    ...(options.powerPreference !== undefined ? { powerPreference: options.powerPreference } : {}),
    ...(options.forceFallbackAdapter === true ? { forceFallbackAdapter: true } : {}),
  });
  if (adapter === null)
    throw new WgpuError(
      "no-adapter",
      "WebGPU offers no adapter (no driver such as lavapipe, or the GPU is blocklisted)",
      { operation: "requestAdapter" },
    );
  const features: GPUFeatureName[] = [];
  for (const [name, w] of [
    ["shader-f16", options.f16],
    ["subgroups", options.subgroups],
    ["timestamp-query", options.timestamps],
  ] as const) {
    const want = wish(w);
    if (want === "off") continue;
    if (adapter.features.has(name)) features.push(name as GPUFeatureName);
    else if (want === "require")
      throw new WgpuError("missing-feature", `the adapter does not offer ${name}`, {
        operation: "requestDevice",
        key: name,
      });
  }
  const requiredLimits: Record<string, number> = {};
  for (const name of [...RAISED_LIMITS, ...LOWERED_LIMITS]) {
    const v = limitOf(adapter.limits, name);
    if (v !== undefined) requiredLimits[name] = v;
  }
  for (const [name, min] of Object.entries(options.minLimits ?? {})) {
    const v = limitOf(adapter.limits, name);
    if (v === undefined || v < min)
      throw new WgpuError("limit-exceeded", `the adapter's ${name} is ${v ?? "absent"}, below the ${min} required`, {
        operation: "requestDevice",
        key: name,
        expected: min,
        ...(v !== undefined ? { actual: v } : {}),
      });
  }
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({
      requiredFeatures: features,
      requiredLimits,
      ...(options.label !== undefined ? { label: options.label } : {}),
    });
  } catch (e) {
    throw new WgpuError("device-lost", `requestDevice failed: ${e instanceof Error ? e.message : String(e)}`, {
      operation: "requestDevice",
    });
  }
  return new WgpuDevice(gpu, adapter, device);
}

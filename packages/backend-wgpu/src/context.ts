// One WebGPU device with its buffer arena and pipeline cache: the object the backend's executor, the
// kernel harness and tools hold. Opened from any `navigator.gpu`-shaped `GPU` (Dawn in Node, a browser).

// Kept in the emitted .d.ts (preserve): its GPU* types are @webgpu/types' globals, a dependency of this package.
/// <reference types="@webgpu/types" preserve="true" />

import { bindKernel, type BindRequest, type BoundKernel } from "./bind.js";
import { BufferArena } from "./buffers.js";
import type { WgpuCaps } from "./caps.js";
import { requestWgpuDevice, type WgpuDevice, type WgpuDeviceOptions } from "./device.js";
import { PipelineCache } from "./pipelines.js";
import { Step, type StepOptions } from "./step.js";

/** Objects created so far: a replayed step must leave every count unchanged. */
export interface WgpuStats {
  /** Buffers created. */
  readonly buffers: number;
  /** Pipelines compiled. */
  readonly pipelines: number;
  /** Pipeline requests served from the cache. */
  readonly pipelineHits: number;
  /** Bind groups created. */
  readonly bindGroups: number;
}

/** A device, its buffers and its pipelines. */
export class WgpuContext {
  /** The device. */
  readonly device: WgpuDevice;
  /** Buffers by role. */
  readonly buffers: BufferArena;
  /** Pipelines by kernel hash. */
  readonly pipelines: PipelineCache;
  #bindGroups = 0;

  constructor(device: WgpuDevice) {
    this.device = device;
    this.buffers = new BufferArena(device);
    this.pipelines = new PipelineCache(device);
  }

  /** The device's caps. */
  get caps(): WgpuCaps {
    return this.device.caps;
  }

  /** Binds one lowered kernel to buffers (compiling or reusing its pipeline). */
  bind(req: BindRequest): Promise<BoundKernel> {
    return bindKernel(this, req);
  }

  /** A step of bound kernels, encoded in order on every submit. */
  step(kernels: readonly BoundKernel[], options: StepOptions = {}): Step {
    this.device.assertAlive("step");
    return new Step(this, kernels, options);
  }

  /** Objects created so far. */
  stats(): WgpuStats {
    const p = this.pipelines.stats();
    return { buffers: this.buffers.created, pipelines: p.compiled, pipelineHits: p.hits, bindGroups: this.#bindGroups };
  }

  /** @internal Counted by {@link bindKernel}. */
  noteBindGroup(): void {
    this.#bindGroups++;
  }

  /** Frees every buffer and destroys the device. */
  dispose(): void {
    this.buffers.destroyAll();
    this.device.dispose();
  }
}

/** Opens a device on `gpu` (see {@link requestWgpuDevice}) and wraps it in a context. */
export async function openWgpu(gpu: GPU | undefined, options: WgpuDeviceOptions = {}): Promise<WgpuContext> {
  return new WgpuContext(await requestWgpuDevice(gpu, options));
}

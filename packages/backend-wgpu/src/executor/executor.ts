// The WebGPU executor where the thread may not block (a page; decision 1601): @poot/executor's generic staged
// program on a WgpuProxyDevice whose requests run on this thread's promise chain, with promises where WebGPU reads
// back (outputs, State) and where its errors surface.

import {
  DeviceExecutor,
  type DeviceBytes,
  type DeviceProgram,
  type DeviceStateSet,
  type ExecutorCaps,
  type OutputData,
  type ProgramSchema,
  type StageInput,
  type StageOptions,
  type WeightSource,
} from "@poot/executor";
import { lowerProgram, type LoweringCache } from "@poot/executor/lowering";
import type { CompileOptions } from "@poot/graph-plan";
import type { WgpuContext } from "../context.js";
import { WgpuHandle, WgpuProxyDevice, wgpuDeviceCaps } from "./device.js";
import { WgpuOps } from "./ops.js";
import type { DeviceRequest, Transport } from "./protocol.js";

/** Options of {@link createWgpuExecutor}. */
export interface WgpuExecutorOptions {
  /** graph-plan options every staged graph is compiled with (e.g. `{ fusion: false }` for one kernel per primitive). */
  readonly compile?: CompileOptions;
  /** Lowered programs are read from and written to this cache. */
  readonly cache?: LoweringCache;
}

/** The generic executor over a WebGPU proxy device, lowering through `cache` when given. */
export function proxyExecutor(
  device: WgpuProxyDevice,
  cache?: LoweringCache,
): DeviceExecutor<WgpuHandle, WgpuHandle, WgpuHandle, WgpuHandle> {
  const target = device.caps.lowering;
  return new DeviceExecutor(device, (input, name) =>
    cache !== undefined ? cache.lower(input, target, name) : lowerProgram(input, target, { name }),
  );
}

/** Requests run in order on this thread; after a queued request fails, later ones are skipped until one is answered. */
class ChainTransport implements Transport {
  #chain: Promise<unknown> = Promise.resolve();
  #error: unknown = undefined;
  constructor(readonly ops: WgpuOps) {}
  post(r: DeviceRequest): void {
    this.#chain = this.#chain
      .then(() => (this.#error === undefined ? this.ops.handle(r) : null))
      .catch((e: unknown) => void (this.#error ??= e));
  }
  request(r: DeviceRequest): Promise<unknown> {
    const p = this.#chain.then(() => {
      const e = this.#error;
      this.#error = undefined;
      if (e !== undefined) throw e;
      return this.ops.handle(r);
    });
    this.#chain = p.catch(() => undefined);
    return p;
  }
  close(): void {}
}

type H = WgpuHandle;

/** A StateSet of the {@link WgpuExecutor}: reads resolve once the device has written them. */
export class WgpuStateSet {
  constructor(
    /** The generic StateSet. */ readonly inner: DeviceStateSet<H>,
    readonly device: WgpuProxyDevice,
  ) {}
  get schema(): ProgramSchema {
    return this.inner.schema;
  }
  get lanes(): number {
    return this.inner.lanes;
  }
  get bytes(): number {
    return this.inner.bytes;
  }
  /** Copies one state to the host (f16/bf16 widened to f32). */
  read(key: string): Promise<OutputData> {
    return this.inner.readAsync(key);
  }
  /** Overwrites one state from the host. */
  write(key: string, data: ArrayLike<number>): void {
    this.inner.write(key, data);
  }
  /** Copies `count` lanes from `from` (see `StateSet.copyLanes`). */
  async copyLanes(from: WgpuStateSet, fromLane: number, toLane: number, count = 1): Promise<void> {
    this.inner.copyLanes(from.inner, fromLane, toLane, count);
    await this.device.syncAsync();
  }
  /** Zeroes every state. */
  zero(): void {
    this.inner.zero();
  }
  /** Frees the buffers. */
  dispose(): void {
    this.inner.dispose();
  }
}

/** A program staged on the {@link WgpuExecutor}: `@poot/executor`'s StagedProgram with promises. */
export class WgpuProgram {
  constructor(
    /** The generic staged program. */ readonly inner: DeviceProgram<H, H, H, H>,
    readonly device: WgpuProxyDevice,
  ) {}
  get name(): string {
    return this.inner.name;
  }
  get schema(): ProgramSchema {
    return this.inner.schema;
  }
  /** A zeroed StateSet with this program's state layout. */
  async createState(): Promise<WgpuStateSet> {
    const s = new WgpuStateSet(this.inner.createState() as DeviceStateSet<H>, this.device);
    await this.device.syncAsync();
    return s;
  }
  /** Writes one slot (checked against the schema). */
  writeSlot(key: string, data: ArrayLike<number>): void {
    this.inner.writeSlot(key, data);
  }
  /** Runs one step with the written slots; resolves when the device has run it. */
  async run(state?: WgpuStateSet): Promise<void> {
    this.inner.run(state?.inner);
    await this.device.syncAsync();
  }
  /** Copies an output of the last step to the host (f16/bf16 widened to f32). */
  readOutput(name: string, into?: OutputData): Promise<OutputData> {
    return this.inner.readOutputAsync(name, into);
  }
  /** Records the next step against `state` for {@link replay}. */
  async capture(state?: WgpuStateSet): Promise<boolean> {
    const ok = this.inner.capture(state?.inner);
    await this.device.syncAsync();
    return ok;
  }
  /** Replays the captured step with the slots' values now. */
  async replay(): Promise<void> {
    this.inner.replay();
    await this.device.syncAsync();
  }
  /** Kernel dispatches per step. */
  dispatchesPerStep(): number {
    return this.inner.dispatchesPerStep();
  }
  /** Frees the program's buffers. */
  dispose(): void {
    this.inner.dispose();
  }
}

/** The WebGPU executor of a thread that may not block: the generic staged program, awaited. */
export class WgpuExecutor {
  /** What the backend can do. */
  readonly caps: ExecutorCaps;
  readonly #exec: DeviceExecutor<H, H, H, H>;
  readonly #device: WgpuProxyDevice;

  constructor(
    /** The device context (disposed with the executor). */ readonly ctx: WgpuContext,
    options: WgpuExecutorOptions = {},
  ) {
    this.#device = new WgpuProxyDevice(wgpuDeviceCaps(ctx.caps, options.compile), new ChainTransport(new WgpuOps(ctx)));
    this.#exec = proxyExecutor(this.#device, options.cache);
    this.caps = this.#exec.caps;
  }
  /** Sets the weight source; each Const is read from it the first time a staged program runs with it. */
  bindWeights(source: WeightSource): void {
    this.#exec.bindWeights(source);
  }
  /** Lowers `input` for the device and loads its kernels (bad WGSL rejects here). */
  async stage(input: StageInput, options: StageOptions = {}): Promise<WgpuProgram> {
    const p = new WgpuProgram(this.#exec.stage(input, options), this.#device);
    await this.#device.syncAsync();
    return p;
  }
  /** Device bytes held now. */
  deviceBytes(): DeviceBytes {
    return this.#exec.deviceBytes();
  }
  /** Kernel dispatches submitted so far by every program (steps, replays, bind-time preparation). */
  dispatchesSubmitted(): number {
    return this.#exec.dispatchesSubmitted();
  }
  /** Frees every program, StateSet and weight, and the device. */
  dispose(): void {
    this.#exec.dispose();
  }
}

/** Opens the WebGPU executor on a context (from `openWgpu`); disposing the executor disposes the context. */
export function createWgpuExecutor(ctx: WgpuContext, options: WgpuExecutorOptions = {}): WgpuExecutor {
  return new WgpuExecutor(ctx, options);
}

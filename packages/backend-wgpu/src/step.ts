// A step: bound kernels encoded in order and submitted again for every token. WebGPU cannot resubmit a
// GPUCommandBuffer, so everything up to encoding is cached and a replay only re-records the dispatches.

import type { BoundKernel, PackCopy } from "./bind.js";
import { BufferUsage, MAP_READ } from "./buffers.js";
import type { WgpuContext } from "./context.js";
import { WgpuError } from "./errors.js";

/** GPU time of one dispatch of a profiled step. */
export interface DispatchTiming {
  /** Position in the step. */
  readonly index: number;
  /** Kernel name. */
  readonly kernel: string;
  /** Kernel hash. */
  readonly hash: string;
  /** Nanoseconds between the pass's begin and end timestamps (the device's resolution; may be quantized). */
  readonly ns: number;
}

/** Options of {@link WgpuContext.step}. */
export interface StepOptions {
  /** A label for messages. */
  readonly label?: string;
  /** Copies encoded after the last dispatch (e.g. a computed state_out into its State buffer). */
  readonly after?: readonly PackCopy[];
  /** Copies encoded before dispatch `i` (e.g. a snapshot of an in-place operand), before its packed-input copies. */
  readonly before?: readonly (readonly PackCopy[])[];
}

// The query-set size WebGPU allows: two timestamps per dispatch.
const MAX_QUERIES = 4096;

/**
 * A recorded sequence of bound kernels. {@link submit} re-encodes the cached pipelines and bind groups
 * (no allocation); {@link profile} runs it once with a pass per dispatch and timestamp queries.
 */
export class Step {
  /** Label. */
  readonly label: string;
  /** The kernels, in dispatch order. */
  readonly kernels: readonly BoundKernel[];
  readonly #after: readonly PackCopy[];
  readonly #before: readonly (readonly PackCopy[])[];
  readonly #ctx: WgpuContext;
  #query: { set: GPUQuerySet; resolve: GPUBuffer; read: GPUBuffer; count: number } | null = null;
  #disposed = false;

  /** @internal Made by {@link WgpuContext.step}. */
  constructor(ctx: WgpuContext, kernels: readonly BoundKernel[], options: StepOptions) {
    this.#ctx = ctx;
    this.kernels = kernels;
    this.label = options.label ?? "step";
    this.#after = options.after ?? [];
    this.#before = options.before ?? [];
  }

  #encode(timed: boolean): GPUCommandBuffer {
    const d = this.#ctx.device.device;
    const enc = d.createCommandEncoder({ label: this.label });
    let pass: GPUComputePassEncoder | null = null;
    this.kernels.forEach((k, i) => {
      // Packed-input copies must sit between passes; a step with none keeps a single pass.
      const copies = this.#before[i]?.length ? [...this.#before[i]!, ...k.copies] : k.copies;
      if (copies.length > 0 || timed) {
        pass?.end();
        pass = null;
        for (const c of copies) enc.copyBufferToBuffer(c.from, c.fromOffset, c.to, c.toOffset, c.bytes);
      }
      if (pass === null) {
        const q = this.#query;
        const timestampWrites =
          timed && q !== null && 2 * i + 1 < q.count
            ? { querySet: q.set, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 }
            : undefined;
        pass = enc.beginComputePass({
          label: `${this.label}:${k.kernel}`,
          ...(timestampWrites !== undefined ? { timestampWrites } : {}),
        });
      }
      pass.setPipeline(k.pipeline.pipeline);
      pass.setBindGroup(0, k.bindGroup);
      pass.dispatchWorkgroups(k.grid[0], k.grid[1], k.grid[2]);
    });
    (pass as GPUComputePassEncoder | null)?.end();
    for (const c of this.#after) enc.copyBufferToBuffer(c.from, c.fromOffset, c.to, c.toOffset, c.bytes);
    if (timed && this.#query !== null) {
      const q = this.#query;
      enc.resolveQuerySet(q.set, 0, q.count, q.resolve, 0);
      enc.copyBufferToBuffer(q.resolve, 0, q.read, 0, q.count * 8);
    }
    return enc.finish();
  }

  #alive(op: string): void {
    if (this.#disposed)
      throw new WgpuError("disposed", `${op} on disposed step ${this.label}`, { operation: op, key: this.label });
    this.#ctx.device.assertAlive(`${op} ${this.label}`);
  }

  /**
   * Encodes and submits the step. Returns once the submit is validated (not when the GPU is done: read a
   * buffer for that); validation and out-of-memory errors reject as {@link WgpuError}s.
   */
  submit(): Promise<void> {
    this.#alive("submit");
    const d = this.#ctx.device.device;
    return this.#ctx.device.scoped(`submit ${this.label}`, () => d.queue.submit([this.#encode(false)]));
  }

  /**
   * Runs the step once with a compute pass per dispatch and timestamps around each; resolves with each
   * dispatch's GPU time. Throws `missing-feature` on a device without `timestamp-query`.
   */
  async profile(): Promise<DispatchTiming[]> {
    this.#alive("profile");
    const dev = this.#ctx.device;
    if (!dev.caps.timestamps)
      throw new WgpuError("missing-feature", "the device was opened without timestamp-query", {
        operation: "profile",
        key: "timestamp-query",
      });
    if (this.#query === null) {
      const count = Math.min(MAX_QUERIES, 2 * this.kernels.length);
      const d = dev.device;
      this.#query = await dev.scoped("create timestamp queries", () => ({
        set: d.createQuerySet({ label: `${this.label} timestamps`, type: "timestamp", count }),
        resolve: d.createBuffer({
          label: `${this.label} timestamps`,
          size: count * 8,
          usage: BufferUsage.QUERY_RESOLVE | BufferUsage.COPY_SRC,
        }),
        read: d.createBuffer({
          label: `${this.label} timestamps (read)`,
          size: count * 8,
          usage: BufferUsage.MAP_READ | BufferUsage.COPY_DST,
        }),
        count,
      }));
    }
    const q = this.#query;
    await dev.scoped(`profile ${this.label}`, () => dev.device.queue.submit([this.#encode(true)]));
    await q.read.mapAsync(MAP_READ);
    const stamps = new BigUint64Array(q.read.getMappedRange().slice(0));
    q.read.unmap();
    const out: DispatchTiming[] = [];
    // Steps longer than 2048 dispatches time only their first 2048 (WebGPU's query-set limit).
    for (let i = 0; 2 * i + 1 < q.count; i++) {
      const k = this.kernels[i]!;
      const dt = stamps[2 * i + 1]! - stamps[2 * i]!;
      out.push({ index: i, kernel: k.kernel, hash: k.pipeline.hash, ns: Number(dt < 0n ? 0n : dt) });
    }
    return out;
  }

  /** Frees the step's query buffers (the bound kernels' buffers belong to the context). */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#query?.set.destroy();
    this.#query?.resolve.destroy();
    this.#query?.read.destroy();
  }
}

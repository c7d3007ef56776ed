// The CUDA device of the generic staged program (@poot/executor's Device): pool buffers (slots with a pinned host
// twin copied in at the start of each step), PTX modules through the on-disk JIT cache, launches on the context's
// stream, and a recorded step either enqueued as it is (run) or captured once as a CUDA graph (replay).

import {
  DeviceError,
  type ByteRegion,
  type Device,
  type DeviceCaps,
  type DeviceOp,
  type LoweredBufferKind,
  type LoweredKernel,
  type LoweringTarget,
} from "@poot/executor";
import { fusionPolicy } from "@poot/executor/lowering";
import type { CompileOptions } from "@poot/graph-plan";
import { ptxArch, type CompiledKernel, type CudaContext } from "../context.js";
import { CudaError } from "../errors.js";
import type { CudaGraph } from "../graph.js";
import type { LaunchParams } from "../launch.js";
import type { DeviceBuffer, PinnedBuffer } from "../memory.js";
import { planCapsOf, synthCapsOf } from "./plan-caps.js";

/** A buffer of the CUDA device: pool memory, with a pinned host twin for slots (what a captured step copies in). */
export interface CudaBuffer {
  readonly bytes: number;
  readonly dev: DeviceBuffer;
  readonly pinned?: PinnedBuffer;
}

/** A bound launch: the loaded kernel and its parameter block. */
export interface CudaLaunch {
  readonly kernel: CompiledKernel;
  readonly params: LaunchParams;
}

/** A recorded step: its operations, and the CUDA graph captured from them when recorded for replay. */
export interface CudaRecording {
  readonly ops: readonly DeviceOp<CudaBuffer, CudaLaunch>[];
  readonly graph: CudaGraph | null;
}

/**
 * What programs are lowered for on a CUDA device: PTX for the device's arch, raw-pointer vector loads, split
 * attention and split block GEMVs (decisions 0804, 0807), and the CUDA fusion policy of `@poot/executor/lowering`.
 */
export function cudaLowering(ctx: CudaContext, compile: CompileOptions = {}): LoweringTarget {
  const plan = planCapsOf(ctx);
  const policy = fusionPolicy("cuda", compile);
  return {
    kind: "cuda",
    language: "ptx",
    plan,
    synth: synthCapsOf(plan),
    codegen: ctx.caps,
    lowerOptions: { arch: ptxArch(ctx.device.info) },
    ...policy,
    snapshotInPlace: true,
  };
}

/** A CudaContext as a Device of the generic staged program. */
export class CudaComputeDevice implements Device<CudaBuffer, CompiledKernel, CudaLaunch, CudaRecording> {
  readonly caps: DeviceCaps;
  #staging: PinnedBuffer | null = null;
  /** CUDA graph launches submitted (captured steps replayed, device greedy loops). */
  graphLaunches = 0;
  /** Milliseconds the host spent blocked on the stream or an event (synchronize, reads, loop read-backs). */
  waitMs = 0;

  constructor(
    readonly ctx: CudaContext,
    compile: CompileOptions = {},
  ) {
    const i = ctx.device.info;
    this.caps = {
      kind: "cuda",
      device: `${i.name} (${i.arch})`,
      dtypes: ["f32", "f16", "bf16", "i32", "u32", "u8", "bool"],
      capture: true,
      deviceMemoryBytes: i.totalMemoryBytes,
      lowering: cudaLowering(ctx, compile),
    };
  }

  /** Free device memory now (cuMemGetInfo). */
  freeMemoryBytes(): number {
    return this.ctx.device.memoryInfo().free;
  }

  allocate(bytes: number, kind: LoweredBufferKind | "snapshot"): CudaBuffer {
    try {
      const dev = this.ctx.allocate(Math.max(4, bytes));
      return kind === "slot" ? { bytes, dev, pinned: this.ctx.pinned(Math.max(4, bytes)) } : { bytes, dev };
    } catch (e) {
      if (e instanceof CudaError && /OUT_OF_MEMORY/.test(e.message))
        throw new DeviceError("out-of-memory", `${bytes} bytes: ${e.message}`, "cuda");
      throw e;
    }
  }

  free(b: CudaBuffer): void {
    b.dev.dispose();
    b.pinned?.dispose();
  }

  upload(b: CudaBuffer, data: ArrayBufferView, offset = 0): void {
    // A slot is written to its pinned twin; the step copies it in (inside a captured graph too).
    if (b.pinned !== undefined) b.pinned.write(data, offset);
    else b.dev.upload(data, offset);
  }

  /** Waits for the stream, then reads through a pinned staging buffer; the view is valid until the next download. */
  download(b: CudaBuffer, offset: number, bytes: number): Uint8Array {
    this.sync();
    if (this.#staging === null || this.#staging.bytes < bytes) {
      this.#staging?.dispose();
      this.#staging = this.ctx.pinned(Math.max(4, bytes));
    }
    const view = this.#staging.bytesView.subarray(0, bytes);
    b.dev.download(view, offset);
    return view;
  }

  copy(from: CudaBuffer, to: CudaBuffer, regions: readonly ByteRegion[]): void {
    for (const r of regions) to.dev.copyRange(from.dev, r.srcOffset, r.dstOffset, r.bytes, this.ctx.stream);
  }

  zero(b: CudaBuffer): void {
    b.dev.fill(0, this.ctx.stream);
  }

  load(kernel: LoweredKernel): CompiledKernel {
    return this.ctx.load(kernel.code, kernel);
  }

  bind(
    kernel: CompiledKernel,
    buffers: Readonly<Record<string, CudaBuffer>>,
    uniforms: Readonly<Record<string, number>>,
  ): CudaLaunch {
    return {
      kernel,
      params: kernel.bind({
        buffers: Object.fromEntries(Object.entries(buffers).map(([k, b]) => [k, b.dev])),
        uniforms,
      }),
    };
  }

  unbind(launch: CudaLaunch): void {
    launch.params.dispose();
  }

  /**
   * Enqueues `ops` on the context's stream (inside a capture: records them); `slots: false` leaves out the slot
   * copies (a device loop writes those slots itself, decision 2201).
   */
  enqueue(ops: readonly DeviceOp<CudaBuffer, CudaLaunch>[], options: { readonly slots?: boolean } = {}): void {
    const stream = this.ctx.stream;
    for (const op of ops) {
      if (op.kind === "slot-in") {
        if (options.slots !== false) op.buffer.pinned?.copyTo(op.buffer.dev, stream, op.buffer.bytes);
      } else if (op.kind === "launch") op.launch.kernel.launch(op.grid, op.launch.params, stream);
      else this.copy(op.from, op.to, op.regions);
    }
  }

  record(ops: readonly DeviceOp<CudaBuffer, CudaLaunch>[], options: { readonly replay: boolean }): CudaRecording {
    return { ops, graph: options.replay ? this.ctx.capture(() => this.enqueue(ops)) : null };
  }

  submit(r: CudaRecording): void {
    if (r.graph !== null) {
      r.graph.launch(this.ctx.stream);
      this.graphLaunches++;
    } else this.enqueue(r.ops);
  }

  /** Runs `ops` with an event after each; each op's GPU microseconds. */
  time(ops: readonly DeviceOp<CudaBuffer, CudaLaunch>[]): number[] {
    const events = [this.ctx.createEvent()];
    events[0]!.record(this.ctx.stream);
    for (const op of ops) {
      this.enqueue([op]);
      const e = this.ctx.createEvent();
      e.record(this.ctx.stream);
      events.push(e);
    }
    this.ctx.synchronize();
    const us = ops.map((_, i) => 1000 * events[i + 1]!.elapsedSince(events[i]!));
    for (const e of events) e.dispose();
    return us;
  }

  release(r: CudaRecording): void {
    r.graph?.dispose();
  }

  sync(): void {
    const t0 = performance.now();
    this.ctx.synchronize();
    this.waitMs += performance.now() - t0;
  }

  dispose(): void {
    this.#staging?.dispose();
    this.ctx.dispose();
  }
}

// The WebGPU Device of the generic staged program (decision 1601): calls are synchronous, as the contract asks,
// because they only name what they make and queue requests; a Transport carries them to the GPUDevice's thread.

import {
  ExecutorError,
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
import { SCALAR_DTYPES } from "@poot/graph-ir";
import { codegenCaps, planCaps, synthCaps, type WgpuCaps } from "../caps.js";
import { runtimeNonFinite } from "../wgsl-fixups.js";
import type { Transport, WireOp } from "./protocol.js";

/** A buffer, kernel, launch or recording of a {@link WgpuProxyDevice}: a number the device side knows it by. */
export interface WgpuHandle {
  readonly id: number;
  readonly bytes: number;
}

/** What programs are lowered for on a device with `caps`: WGSL with codegen's non-finite literals fixed. */
export function wgpuLowering(caps: WgpuCaps, compile: CompileOptions = {}): LoweringTarget {
  const plan = planCaps(caps);
  return {
    kind: "wgpu",
    language: "wgsl",
    plan,
    synth: synthCaps(caps),
    codegen: codegenCaps(caps),
    compile: fusionPolicy("wgpu", compile).compile,
    snapshotInPlace: true,
    variant: "wgpu-nonfinite-1",
    fixup: (code) => (code.text === undefined ? code : { ...code, text: runtimeNonFinite(code.text) }),
  };
}

/** The caps of a WebGPU device as the staged program sees them. */
export function wgpuDeviceCaps(caps: WgpuCaps, compile: CompileOptions = {}): DeviceCaps {
  return {
    kind: "wgpu",
    device: caps.adapter,
    // Every scalar dtype (16-bit and narrower types live in 32-bit words in WGSL).
    dtypes: SCALAR_DTYPES,
    capture: true,
    deviceMemoryBytes: null,
    lowering: wgpuLowering(caps, compile),
  };
}

type H = WgpuHandle;

/** A Device whose work runs wherever its transport sends it (a worker thread in Node, a promise chain on a page). */
export class WgpuProxyDevice implements Device<H, H, H, H> {
  #next = 1;

  constructor(
    readonly caps: DeviceCaps,
    readonly transport: Transport,
  ) {}

  #handle(bytes = 0): H {
    return { id: this.#next++, bytes };
  }

  allocate(bytes: number, kind: LoweredBufferKind | "snapshot", label: string): H {
    const h = this.#handle(bytes);
    this.transport.post({ op: "allocate", id: h.id, bytes, kind, label });
    return h;
  }

  free(buffer: H): void {
    this.transport.post({ op: "free", id: buffer.id });
  }

  upload(buffer: H, data: ArrayBufferView, offset = 0): void {
    // A copy: the caller may reuse its array before the request is run.
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice();
    this.transport.post({ op: "upload", id: buffer.id, data: bytes, offset });
  }

  /** Blocks until queued work is done and the bytes are read (Node's worker transport); see {@link WgpuProxyDevice.downloadAsync}. */
  download(buffer: H, offset: number, bytes: number): Uint8Array {
    if (this.transport.call === undefined)
      throw new ExecutorError(
        "unsupported-program",
        "WebGPU reads back asynchronously here: use the async executor's reads (createWgpuExecutor)",
      );
    return this.transport.call({ op: "download", id: buffer.id, offset, bytes }) as Uint8Array;
  }

  /** Resolves with `bytes` at `offset` once queued work is done: the read a page's thread can make. */
  async downloadAsync(buffer: H, offset: number, bytes: number): Promise<Uint8Array> {
    return (await this.transport.request({ op: "download", id: buffer.id, offset, bytes })) as Uint8Array;
  }

  copy(from: H, to: H, regions: readonly ByteRegion[]): void {
    this.transport.post({ op: "copy", from: from.id, to: to.id, regions });
  }

  zero(buffer: H): void {
    this.transport.post({ op: "zero", id: buffer.id });
  }

  load(kernel: LoweredKernel): H {
    const h = this.#handle();
    this.transport.post({ op: "load", id: h.id, kernel });
    return h;
  }

  bind(kernel: H, buffers: Readonly<Record<string, H>>, uniforms: Readonly<Record<string, number>>): H {
    const h = this.#handle();
    const ids: Record<string, number> = {};
    for (const [name, b] of Object.entries(buffers)) ids[name] = b.id;
    this.transport.post({ op: "bind", id: h.id, kernel: kernel.id, buffers: ids, uniforms });
    return h;
  }

  unbind(launch: H): void {
    this.transport.post({ op: "unbind", id: launch.id });
  }

  record(ops: readonly DeviceOp<H, H>[], options: { readonly name: string; readonly replay: boolean }): H {
    const h = this.#handle();
    // Slots are device buffers written in queue order: a `slot-in` needs no command.
    const wire: WireOp[] = [];
    for (const op of ops) {
      if (op.kind === "launch") wire.push({ kind: "launch", launch: op.launch.id, grid: op.grid });
      else if (op.kind === "copy") wire.push({ kind: "copy", from: op.from.id, to: op.to.id, regions: op.regions });
    }
    this.transport.post({ op: "record", id: h.id, ops: wire, name: options.name });
    return h;
  }

  submit(recording: H): void {
    this.transport.post({ op: "submit", id: recording.id });
  }

  release(recording: H): void {
    this.transport.post({ op: "release", id: recording.id });
  }

  /**
   * Waits until every queued request has been issued and validated, where the thread may block (the GPU queue keeps
   * their order and a read waits for the GPU); on a page it returns at once and errors surface at the next read.
   */
  sync(): void {
    this.transport.call?.({ op: "sync" });
  }

  /** Resolves once every queued request has been issued and validated; rejects with the first error one met. */
  async syncAsync(): Promise<void> {
    await this.transport.request({ op: "sync" });
  }

  dispose(): void {
    try {
      if (this.transport.call !== undefined) this.transport.call({ op: "dispose" });
      else this.transport.post({ op: "dispose" });
    } finally {
      this.transport.close();
    }
  }
}

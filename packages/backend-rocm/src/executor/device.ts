// The ROCm device of the generic staged program (@poot/executor's Device): device memory from hipMalloc (slots with
// a pinned host twin copied in at the start of each step, so a captured step reads the latest values), code objects
// built for the GPU's gcnArchName and loaded with hipModuleLoadData, launches with kernel arguments packed from each
// code object's metadata, and a recorded step either enqueued as it is (run) or captured once into a HIP graph
// (replay). Written from the HIP documentation; nothing here has run on an AMD GPU (see the README).

import {
  DeviceError,
  type ByteRegion,
  type Device,
  type DeviceCaps,
  type DeviceOp,
  type LoweredBufferKind,
  type LoweredKernel,
} from "@poot/executor";
import type { CompileOptions } from "@poot/graph-plan";
import { RocmError } from "../errors.js";
import type { Handle } from "../hip/ffi.js";
import type { HipRuntime } from "../hip/runtime.js";
import { buildKernelImage, packLaunch, rocmLowering, type CodeObjectBuilder, type RocmKernelImage } from "./program.js";

/** A buffer of the ROCm device: device memory, with a pinned host twin for slots. */
export interface RocmBuffer {
  readonly bytes: number;
  readonly ptr: bigint;
  readonly pinned?: { readonly ptr: Handle; readonly view: Uint8Array };
}

/** A loaded kernel: its image (code object, metadata, binding order), module and function. */
export interface RocmKernel {
  readonly image: RocmKernelImage;
  readonly module: Handle;
  readonly fn: Handle;
}

/** A bound launch: the kernel and its buffers and uniforms (the kernargs are packed per launch, grid included). */
export interface RocmLaunch {
  readonly kernel: RocmKernel;
  readonly buffers: Readonly<Record<string, bigint>>;
  readonly uniforms: Readonly<Record<string, number>>;
}

/** A recorded step: its operations, and the HIP graph captured from them when recorded for replay. */
export interface RocmRecording {
  readonly ops: readonly DeviceOp<RocmBuffer, RocmLaunch>[];
  readonly graph: { graph: Handle; exec: Handle } | null;
}

// hipErrorOutOfMemory, and the errors after which the device's state is lost: hipErrorIllegalAddress,
// hipErrorLaunchFailure (hip_runtime_api.h; the same numbers as CUDA's).
const HIP_OUT_OF_MEMORY = 2;
const HIP_LOST: ReadonlySet<number> = new Set([700, 719]);

/** Runs `f`; a HIP error that loses the device's state becomes DeviceError("device-lost"). */
function guard<T>(what: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof RocmError && e.context.result !== undefined && HIP_LOST.has(e.context.result))
      throw new DeviceError("device-lost", `${what}: ${e.message}`, "rocm");
    throw e;
  }
}

/** A HipRuntime as a Device of the generic staged program. */
export class RocmDevice implements Device<RocmBuffer, RocmKernel, RocmLaunch, RocmRecording> {
  readonly caps: DeviceCaps;
  readonly stream: Handle;
  readonly #modules = new Map<Uint8Array, Handle>();

  constructor(
    readonly hip: HipRuntime,
    readonly builder: CodeObjectBuilder,
    compile: CompileOptions = {},
  ) {
    // Throws no_code_object for a GPU the backend plans nothing for, before any memory is taken.
    const lowering = rocmLowering(hip.gcnArchName, compile);
    this.stream = hip.createStream();
    this.caps = {
      kind: "rocm",
      device: `AMD GPU ${hip.device} (${hip.gcnArchName})`,
      dtypes: ["f32", "f16", "bf16", "i32", "u32", "u8", "bool"],
      capture: true,
      deviceMemoryBytes: hip.memoryInfo().total,
      lowering,
    };
  }

  /** Free device memory now (hipMemGetInfo). */
  freeMemoryBytes(): number {
    return this.hip.memoryInfo().free;
  }

  allocate(bytes: number, kind: LoweredBufferKind | "snapshot"): RocmBuffer {
    const n = Math.max(4, bytes);
    let ptr: bigint;
    try {
      ptr = this.hip.malloc(n);
    } catch (e) {
      if (e instanceof RocmError && e.context.result === HIP_OUT_OF_MEMORY)
        throw new DeviceError("out-of-memory", `${bytes} bytes: ${e.message}`, "rocm");
      throw e;
    }
    // Memory from hipMalloc is not zeroed; the contract's is.
    this.hip.fill(ptr, 0, n, this.stream);
    if (kind !== "slot") return { bytes, ptr };
    // The pinned twin is what slot-in copies: zeroed too, so an unwritten slot reads as zeros.
    const pinned = this.hip.hostAlloc(n);
    pinned.view.fill(0);
    return { bytes, ptr, pinned };
  }

  free(b: RocmBuffer): void {
    this.hip.synchronize(this.stream);
    this.hip.free(b.ptr);
    if (b.pinned !== undefined) this.hip.hostFree(b.pinned.ptr);
  }

  upload(b: RocmBuffer, data: ArrayBufferView, offset = 0): void {
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    // A slot is written to its pinned twin; the step copies it in (inside a captured graph too).
    if (b.pinned !== undefined) {
      b.pinned.view.set(bytes, offset);
      return;
    }
    this.hip.synchronize(this.stream);
    this.hip.copyToDevice(b.ptr + BigInt(offset), bytes);
  }

  download(b: RocmBuffer, offset: number, bytes: number): Uint8Array {
    guard("download", () => this.hip.synchronize(this.stream));
    const out = new Uint8Array(bytes);
    this.hip.copyToHost(out, b.ptr + BigInt(offset));
    return out;
  }

  copy(from: RocmBuffer, to: RocmBuffer, regions: readonly ByteRegion[]): void {
    for (const r of regions)
      this.hip.copyOnDevice(to.ptr + BigInt(r.dstOffset), from.ptr + BigInt(r.srcOffset), r.bytes, this.stream);
  }

  zero(b: RocmBuffer): void {
    this.hip.fill(b.ptr, 0, Math.max(4, b.bytes), this.stream);
  }

  /** Builds the kernel's code object for this GPU (no_code_object when its instructions do not exist here) and loads it. */
  load(kernel: LoweredKernel): RocmKernel {
    const image = buildKernelImage(kernel, this.hip.gcnArchName, this.builder);
    // A program's kernels share one code object (CodeObjectBuilder.prebuild): it is loaded once.
    let module = this.#modules.get(image.codeObject);
    if (module === undefined) {
      module = this.hip.loadModule(image.codeObject);
      this.#modules.set(image.codeObject, module);
    }
    return { image, module, fn: this.hip.getFunction(module, image.meta.name) };
  }

  bind(
    kernel: RocmKernel,
    buffers: Readonly<Record<string, RocmBuffer>>,
    uniforms: Readonly<Record<string, number>>,
  ): RocmLaunch {
    const ptrs = Object.fromEntries(Object.entries(buffers).map(([k, b]) => [k, b.ptr]));
    // Packed once here with a 1x1x1 grid, so a missing buffer or uniform fails at bind, not in a recorded step.
    packLaunch(kernel.image, ptrs, uniforms, [1, 1, 1]);
    return { kernel, buffers: ptrs, uniforms };
  }

  unbind(_launch: RocmLaunch): void {
    // Nothing native is held per launch: the kernarg segment is packed and copied by HIP at each enqueue.
  }

  #enqueue(ops: readonly DeviceOp<RocmBuffer, RocmLaunch>[]): void {
    for (const op of ops) {
      if (op.kind === "slot-in") {
        const b = op.buffer;
        if (b.pinned !== undefined) this.hip.copyFromHostAsync(b.ptr, b.pinned.ptr, Math.max(4, b.bytes), this.stream);
      } else if (op.kind === "launch") {
        const l = op.launch;
        const args = packLaunch(l.kernel.image, l.buffers, l.uniforms, op.grid);
        this.hip.launch(l.kernel.fn, op.grid, l.kernel.image.block, args.bytes, this.stream);
      } else this.copy(op.from, op.to, op.regions);
    }
  }

  record(ops: readonly DeviceOp<RocmBuffer, RocmLaunch>[], options: { readonly replay: boolean }): RocmRecording {
    return { ops, graph: options.replay ? this.hip.capture(this.stream, () => this.#enqueue(ops)) : null };
  }

  submit(r: RocmRecording): void {
    guard("submit", () => (r.graph !== null ? this.hip.replay(r.graph, this.stream) : this.#enqueue(r.ops)));
  }

  release(r: RocmRecording): void {
    if (r.graph !== null) this.hip.destroyGraph(r.graph);
  }

  sync(): void {
    guard("sync", () => this.hip.synchronize(this.stream));
  }

  dispose(): void {
    this.hip.synchronize(this.stream);
    for (const m of this.#modules.values()) this.hip.unloadModule(m);
    this.#modules.clear();
    this.hip.destroyStream(this.stream);
  }
}

// The Device: what a backend is once the lowering is shared. Memory (allocate, free, upload, download, copy,
// zero), code (load a lowered kernel, bind a launch), work (record a list of operations, submit it, capture it
// for replay) and caps. The generic staged program (staged.ts) runs any LoweredProgram on any Device.

import type { ScalarDType } from "@poot/graph-ir";
import type { ExecutorCaps, WeightFileRange } from "./contract.js";
import type { HostBuffer } from "./host-state.js";
import type { ByteRegion, LoweredBufferKind, LoweredKernel, LoweringTarget } from "./lowering/types.js";

/** A device buffer: opaque to the staged program except for its size. */
export interface DeviceBuffer {
  readonly bytes: number;
}

/** One operation of a recorded step. */
export type DeviceOp<B extends DeviceBuffer, L> =
  /** Make a slot's last written value visible to the launches (a host-to-device copy where slots are staged). */
  | { readonly kind: "slot-in"; readonly buffer: B }
  /** A kernel launch bound by {@link Device.bind}. */
  | {
      readonly kind: "launch";
      readonly launch: L;
      readonly grid: readonly [number, number, number];
      readonly label: string;
      /** The plan's op and kernel request kind (profiles label a launch `op/request`). */
      readonly plan?: { readonly op: string; readonly request: string };
    }
  /** Byte-region copies from one buffer to another, in order. */
  | {
      readonly kind: "copy";
      readonly from: B;
      readonly to: B;
      readonly regions: readonly ByteRegion[];
      readonly label: string;
    };

/** Why a device failed: stable codes a caller can branch on. */
export type DeviceErrorCode =
  /** No driver or loader for this kind of device. */
  | "no-driver"
  /** The device was lost (reset, removed, a fatal fault). */
  | "device-lost"
  /** An allocation did not fit in device memory. */
  | "out-of-memory"
  /** Lowered code the device refused to load (a compile or link error). */
  | "bad-code";

/** The typed error of a {@link Device}. */
export class DeviceError extends Error {
  override readonly name = "DeviceError";
  /**
   * @param code - stable code.
   * @param message - what went wrong, naming the device and operation.
   * @param device - the device kind (`"cuda"`, `"vulkan"`, ...).
   */
  constructor(
    readonly code: DeviceErrorCode,
    message: string,
    readonly device: string,
  ) {
    super(`[${code}] ${device}: ${message}`);
  }
}

/** What the staged program needs of a device, as data. */
export interface DeviceCaps extends ExecutorCaps {
  /** What programs are lowered for on this device (planner, synthesizer and codegen caps, fusion policy). */
  readonly lowering: LoweringTarget;
}

/**
 * One device. `B` is its buffer, `K` a loaded kernel, `L` a bound launch, `R` a recorded step. Calls are
 * synchronous; work is queued in order and `sync` waits for it.
 */
export interface Device<B extends DeviceBuffer = DeviceBuffer, K = unknown, L = unknown, R = unknown> {
  readonly caps: DeviceCaps;
  /**
   * A zeroed buffer of `bytes` for a buffer of `kind` (slots may live in host-visible memory). A `weight` buffer need
   * not be zeroed: it is written whole right after.
   */
  allocate(bytes: number, kind: LoweredBufferKind | "snapshot", label: string): B;
  /** Frees a buffer (after the work queued on it). */
  free(buffer: B): void;
  /** Writes `data` at `offset` (queued after earlier work; a slot's write is seen by the next `slot-in`). */
  upload(buffer: B, data: ArrayBufferView, offset?: number): void;
  /** Waits for queued work, then reads `bytes` at `offset`. */
  download(buffer: B, offset: number, bytes: number): Uint8Array;
  /**
   * Optional, for devices that read back asynchronously (WebGPU's `mapAsync`, decision 1601): resolves with `bytes` at
   * `offset` once queued work is done. The staged program's `readOutputAsync` and `readAsync` use it; where the
   * thread cannot block, `download` may throw.
   */
  downloadAsync?(buffer: B, offset: number, bytes: number): Promise<Uint8Array>;
  /** Queues region copies from `from` to `to`. */
  copy(from: B, to: B, regions: readonly ByteRegion[]): void;
  /** Queues zeroing a buffer. */
  zero(buffer: B): void;
  /** Loads one lowered kernel (compiles it for the device). */
  load(kernel: LoweredKernel): K;
  /** Called after a staged program's kernels are loaded: a device may persist what loading compiled (optional). */
  loaded?(): void;
  /** Binds buffers by the kernel's buffer names and uniform values by name: a launch ready to record. */
  bind(kernel: K, buffers: Readonly<Record<string, B>>, uniforms: Readonly<Record<string, number>>): L;
  /** Frees a bound launch (after the recordings that use it are released). */
  unbind(launch: L): void;
  /**
   * Records operations into a step that {@link submit} runs. `replay` asks for the device's replayable form (CUDA
   * graphs, command buffers, fused regions); a device without one may return the same kind of recording.
   */
  record(ops: readonly DeviceOp<B, L>[], options: { readonly name: string; readonly replay: boolean }): R;
  /** Queues a recorded step. */
  submit(recording: R): void;
  /** Frees a recording. */
  release(recording: R): void;
  /** Waits for everything queued. */
  sync(): void;
  /** Optional: device memory free now in bytes (devices without a query leave it out). */
  freeMemoryBytes?(): number;
  /**
   * Optional: runs `ops` once with a device timer after each and returns each operation's device time in
   * microseconds (events serialize nothing the queue did not already order). Devices without timers leave it out.
   */
  time?(ops: readonly DeviceOp<B, L>[]): number[];
  /**
   * Optional, for devices whose buffers can be addressed in part (the CPU's shared memory): `bytes` of `buffer` from
   * `offset`, as a buffer of its own that is never freed. With it, the staged program places a program's transients
   * in one arena at the lowering's offsets and its scratch areas in one buffer (launches run in order).
   */
  slice?(buffer: B, offset: number, bytes: number): B;
  /**
   * Optional, for host-visible memory the host may write and read in place (the CPU's shared memory): a typed view
   * of `n` elements of `dtype` (16-bit floats as bits) over `buffer` from byte `offset`. With it, slots are written and outputs read
   * through views made once, so a step with `readOutput(name, into)` makes no host allocation.
   */
  hostView?(buffer: B, offset: number, dtype: ScalarDType, n: number): HostBuffer;
  /**
   * Optional, for host memory that can map a file (the CPU's shared memory): a weight buffer of `bytes` holding the
   * file's bytes at `file` (the weight's storage as stored), mapped rather than read; null where it cannot (then the
   * staged program allocates and reads as usual).
   */
  mapWeight?(bytes: number, file: WeightFileRange): B | null;
  /** Releases the device. */
  dispose(): void;
}

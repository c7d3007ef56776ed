// Device buffers by role (weights, slots, state, io, uniforms): creation under error scopes, writes padded
// to WebGPU's 4-byte rule, and read-back through one staging buffer kept per buffer.

// Kept in the emitted .d.ts (preserve): its GPU* types are @webgpu/types' globals, a dependency of this package.
/// <reference types="@webgpu/types" preserve="true" />

import type { WgpuDevice } from "./device.js";
import { WgpuError } from "./errors.js";

// The spec's flag values, so the library needs no `GPUBufferUsage` global (absent in Node before Dawn starts).
/** `GPUBufferUsage` bits. */
export const BufferUsage = {
  MAP_READ: 0x1,
  MAP_WRITE: 0x2,
  COPY_SRC: 0x4,
  COPY_DST: 0x8,
  UNIFORM: 0x40,
  STORAGE: 0x80,
  QUERY_RESOLVE: 0x200,
} as const;
/** `GPUMapMode.READ`. */
export const MAP_READ = 0x1;
/** `GPUShaderStage.COMPUTE`. */
export const SHADER_COMPUTE = 0x4;

/** What a buffer holds (uniform blocks are bound as uniforms, the rest as storage). */
export type BufferRole = "weight" | "slot" | "state" | "io" | "uniform";

/** Rounds up to a multiple of 4 (WebGPU copy and write sizes). */
export const pad4 = (n: number): number => Math.ceil(n / 4) * 4;

/** One device buffer. */
export class WgpuBuffer {
  /** The WebGPU buffer (size padded to 4 bytes, at least 16). */
  readonly gpu: GPUBuffer;
  /** Logical size in bytes. */
  readonly bytes: number;
  /** Its role. */
  readonly role: BufferRole;
  /** Label for messages. */
  readonly label: string;
  readonly #owner: BufferArena;
  #staging: GPUBuffer | null = null;
  // Reads share one staging buffer, so they run one after another.
  #reading: Promise<unknown> = Promise.resolve();
  #destroyed = false;

  /** @internal Made by {@link BufferArena.create}. */
  constructor(owner: BufferArena, gpu: GPUBuffer, bytes: number, role: BufferRole, label: string) {
    this.#owner = owner;
    this.gpu = gpu;
    this.bytes = bytes;
    this.role = role;
    this.label = label;
  }

  /** Whether {@link destroy} was called. */
  get destroyed(): boolean {
    return this.#destroyed;
  }

  /** Queues a write of `data` at `byteOffset` (both padded to 4 bytes as WebGPU requires). */
  write(data: ArrayBufferView, byteOffset = 0): void {
    this.#alive("write");
    if (byteOffset % 4 !== 0)
      throw new WgpuError("bad-binding", `write offset ${byteOffset} of ${this.label} is not a multiple of 4`, {
        operation: "write",
        key: this.label,
        actual: byteOffset,
      });
    if (byteOffset + data.byteLength > this.bytes) {
      throw new WgpuError(
        "bad-binding",
        `write of ${data.byteLength} bytes at ${byteOffset} overruns ${this.label} (${this.bytes} bytes)`,
        { operation: "write", key: this.label, expected: this.bytes, actual: byteOffset + data.byteLength },
      );
    }
    let bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    // Only odd-sized data (u8/16-bit tensors of odd length) is copied, to reach a 4-byte length.
    if (bytes.byteLength % 4 !== 0) {
      const padded = new Uint8Array(pad4(bytes.byteLength));
      padded.set(bytes);
      bytes = padded;
    }
    // Shared-memory views are accepted by implementations; the DOM typings are narrower.
    this.#owner.device.device.queue.writeBuffer(this.gpu, byteOffset, bytes as Uint8Array<ArrayBuffer>);
  }

  /** Copies the buffer (or `bytes` bytes from `byteOffset`) to the host once the queue's work is done. */
  read(byteOffset = 0, bytes = this.bytes - byteOffset): Promise<Uint8Array> {
    const next = this.#reading.then(() => this.#read(byteOffset, bytes));
    this.#reading = next.catch(() => undefined);
    return next;
  }

  async #read(byteOffset: number, bytes: number): Promise<Uint8Array> {
    this.#alive("read");
    const dev = this.#owner.device;
    dev.assertAlive(`read ${this.label}`);
    if (byteOffset % 4 !== 0 || byteOffset + bytes > this.bytes)
      throw new WgpuError(
        "bad-binding",
        `read of ${bytes} bytes at ${byteOffset} from ${this.label} (${this.bytes} bytes)`,
        { operation: "read", key: this.label },
      );
    // One staging buffer per buffer, made on first read: repeated reads of an output allocate nothing.
    this.#staging ??= this.#owner.makeStaging(this);
    const n = pad4(bytes);
    const enc = dev.device.createCommandEncoder();
    enc.copyBufferToBuffer(this.gpu, byteOffset, this.#staging, 0, n);
    dev.device.queue.submit([enc.finish()]);
    try {
      await this.#staging.mapAsync(MAP_READ, 0, n);
    } catch (e) {
      dev.assertAlive(`read ${this.label}`);
      throw new WgpuError("validation", `mapping the staging buffer of ${this.label} failed: ${String(e)}`, {
        operation: "read",
        key: this.label,
      });
    }
    const out = new Uint8Array(bytes);
    out.set(new Uint8Array(this.#staging.getMappedRange(0, n)).subarray(0, bytes));
    this.#staging.unmap();
    return out;
  }

  /** Frees the buffer (and its staging buffer). */
  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    this.gpu.destroy();
    this.#staging?.destroy();
    this.#owner.forget(this);
  }

  #alive(op: string): void {
    if (this.#destroyed)
      throw new WgpuError("disposed", `${op} on destroyed buffer ${this.label}`, { operation: op, key: this.label });
  }
}

/** Makes and tracks the buffers of one device. */
export class BufferArena {
  /** The device. */
  readonly device: WgpuDevice;
  readonly #live = new Set<WgpuBuffer>();
  #created = 0;

  constructor(device: WgpuDevice) {
    this.device = device;
  }

  /** Buffers created so far (a replayed step must not move this). */
  get created(): number {
    return this.#created;
  }

  /** Creates a buffer for `role` of `bytes` bytes; throws `out-of-memory`/`validation` as the device reports. */
  async create(role: BufferRole, bytes: number, label: string): Promise<WgpuBuffer> {
    if (!Number.isSafeInteger(bytes) || bytes < 0)
      throw new WgpuError("bad-binding", `buffer ${label}: ${bytes} is not a byte count`, {
        operation: "createBuffer",
        key: label,
        actual: bytes,
      });
    const max = this.device.caps.maxBufferBytes;
    if (pad4(bytes) > max)
      throw new WgpuError(
        "out-of-memory",
        `buffer ${label} of ${bytes} bytes exceeds the device's maxBufferSize ${max}`,
        { operation: "createBuffer", key: label, expected: max, actual: bytes },
      );
    const usage =
      role === "uniform"
        ? BufferUsage.UNIFORM | BufferUsage.COPY_DST
        : BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST;
    const gpu = await this.device.scoped(`createBuffer ${label}`, () =>
      this.device.device.createBuffer({ label, size: Math.max(16, pad4(bytes)), usage }),
    );
    const b = new WgpuBuffer(this, gpu, bytes, role, label);
    this.#live.add(b);
    this.#created++;
    return b;
  }

  /** Creates a buffer and writes `data` into it. */
  async upload(role: BufferRole, data: ArrayBufferView, label: string): Promise<WgpuBuffer> {
    const b = await this.create(role, data.byteLength, label);
    b.write(data);
    return b;
  }

  /** Frees every buffer. */
  destroyAll(): void {
    for (const b of [...this.#live]) b.destroy();
  }

  /** @internal A staging buffer for reading `b` back. */
  makeStaging(b: WgpuBuffer): GPUBuffer {
    return this.device.device.createBuffer({
      label: `${b.label} (staging)`,
      size: Math.max(16, pad4(b.bytes)),
      usage: BufferUsage.MAP_READ | BufferUsage.COPY_DST,
    });
  }

  /** @internal Called by {@link WgpuBuffer.destroy}. */
  forget(b: WgpuBuffer): void {
    this.#live.delete(b);
  }
}

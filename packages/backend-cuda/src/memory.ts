// Device memory: a size-class pool over cuMemAlloc (freed blocks are kept and reused, so a steady-state
// step allocates nothing from the driver), device buffers with host copies, and pinned host buffers.

import { CudaError, invariant } from "./errors.js";
import { check, devicePointer, native, type DriverApi, type Handle } from "./ffi.js";
import type { CudaStream } from "./stream.js";

/** Smallest block the pool hands out; also the alignment of every block (cuMemAlloc gives 256). */
const MIN_BLOCK = 256;

/** Counters of a {@link MemoryPool}. */
export interface PoolStats {
  /** Bytes obtained from the driver (cuMemAlloc) and not yet returned. */
  readonly reservedBytes: number;
  /** Bytes of blocks handed out and not yet released. */
  readonly inUseBytes: number;
  /** cuMemAlloc calls made so far (a step that allocates nothing leaves this unchanged). */
  readonly driverAllocations: number;
  /** `allocate` calls served from a free block. */
  readonly reuses: number;
}

/** The block size class for `bytes`: powers of two up to 1 MiB, then multiples of 1 MiB (less waste on weights). */
export function blockSize(bytes: number): number {
  if (!Number.isInteger(bytes) || bytes < 0)
    throw new CudaError("bad-argument", `cannot allocate ${bytes} bytes`, { value: bytes });
  if (bytes <= MIN_BLOCK) return MIN_BLOCK;
  if (bytes <= 1 << 20) return 2 ** Math.ceil(Math.log2(bytes));
  return Math.ceil(bytes / (1 << 20)) * (1 << 20);
}

/** A size-class caching allocator over cuMemAlloc_v2: released blocks go to a free list by size class. */
export class MemoryPool {
  private readonly free = new Map<number, bigint[]>();
  private reserved = 0;
  private inUse = 0;
  private allocations = 0;
  private reused = 0;
  constructor(private readonly api: DriverApi) {}

  /** A device buffer of at least `bytes` bytes (contents undefined). */
  allocate(bytes: number): DeviceBuffer {
    const size = blockSize(bytes);
    const list = this.free.get(size);
    let ptr = list?.pop();
    if (ptr !== undefined) this.reused++;
    else {
      const out: unknown[] = [0];
      check(this.api, this.api.cuMemAlloc(out, size), "cuMemAlloc_v2");
      ptr = devicePointer(out[0]);
      this.allocations++;
      this.reserved += size;
    }
    this.inUse += size;
    return new DeviceBuffer(this.api, ptr, bytes, size, this);
  }

  /** @internal Returns a block to its free list. */
  release(ptr: bigint, size: number): void {
    this.inUse -= size;
    const list = this.free.get(size) ?? [];
    list.push(ptr);
    this.free.set(size, list);
  }

  /** Returns every free block to the driver (blocks in use stay valid). */
  trim(): void {
    for (const [size, list] of this.free) {
      for (const p of list) {
        check(this.api, this.api.cuMemFree(p), "cuMemFree_v2");
        this.reserved -= size;
      }
    }
    this.free.clear();
  }

  /** Counters. */
  stats(): PoolStats {
    return {
      reservedBytes: this.reserved,
      inUseBytes: this.inUse,
      driverAllocations: this.allocations,
      reuses: this.reused,
    };
  }
}

/** A block of device memory from a {@link MemoryPool}. */
export class DeviceBuffer {
  private live = true;
  /** @internal */
  constructor(
    private readonly api: DriverApi,
    /** Device address (CUdeviceptr). */
    readonly ptr: bigint,
    /** Bytes asked for. */
    readonly bytes: number,
    /** Bytes of the block (size class). */
    readonly blockBytes: number,
    private readonly pool: MemoryPool,
  ) {}

  private alive(): void {
    if (!this.live) throw new CudaError("disposed", "device buffer used after dispose()", { value: this.ptr });
  }

  private fits(bytes: number, offset: number): void {
    if (offset < 0 || bytes < 0 || offset + bytes > this.bytes) {
      throw new CudaError(
        "bad-argument",
        `copy of ${bytes} bytes at offset ${offset} overruns a ${this.bytes}-byte buffer`,
        { value: { bytes, offset, size: this.bytes } },
      );
    }
  }

  /** Copies host data into the buffer at `offset` bytes (synchronous). */
  upload(data: ArrayBufferView, offset = 0): void {
    this.alive();
    this.fits(data.byteLength, offset);
    const src = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    check(this.api, this.api.cuMemcpyHtoD(this.ptr + BigInt(offset), src, data.byteLength), "cuMemcpyHtoD_v2");
  }

  /** Copies `into.byteLength` bytes from `offset` into `into` (synchronous; waits for prior work on the context). */
  download<T extends ArrayBufferView>(into: T, offset = 0): T {
    this.alive();
    this.fits(into.byteLength, offset);
    const dst = new Uint8Array(into.buffer, into.byteOffset, into.byteLength);
    check(this.api, this.api.cuMemcpyDtoH(dst, this.ptr + BigInt(offset), into.byteLength), "cuMemcpyDtoH_v2");
    return into;
  }

  /** Enqueues a device-to-device copy of `bytes` bytes from `src` into this buffer on `stream`. */
  copyFrom(src: DeviceBuffer, bytes: number, stream: CudaStream): void {
    this.alive();
    this.fits(bytes, 0);
    if (bytes > src.bytes)
      throw new CudaError("bad-argument", `copy of ${bytes} bytes overruns the ${src.bytes}-byte source`, {
        value: bytes,
      });
    check(this.api, this.api.cuMemcpyDtoDAsync(this.ptr, src.ptr, bytes, stream.handle), "cuMemcpyDtoDAsync_v2");
  }

  /** Enqueues a copy of `bytes` bytes from `src` at `srcOffset` to this buffer at `dstOffset` on `stream`. */
  copyRange(src: DeviceBuffer, srcOffset: number, dstOffset: number, bytes: number, stream: CudaStream): void {
    this.alive();
    this.fits(bytes, dstOffset);
    if (srcOffset < 0 || srcOffset + bytes > src.bytes)
      throw new CudaError(
        "bad-argument",
        `copy of ${bytes} bytes at ${srcOffset} overruns the ${src.bytes}-byte source`,
        { value: srcOffset },
      );
    check(
      this.api,
      this.api.cuMemcpyDtoDAsync(this.ptr + BigInt(dstOffset), src.ptr + BigInt(srcOffset), bytes, stream.handle),
      "cuMemcpyDtoDAsync_v2",
    );
  }

  /** Enqueues a byte fill of the whole buffer on `stream`. */
  fill(value: number, stream: CudaStream): void {
    this.alive();
    check(this.api, this.api.cuMemsetD8Async(this.ptr, value & 0xff, this.bytes, stream.handle), "cuMemsetD8Async");
  }

  /** Returns the block to its pool. */
  dispose(): void {
    if (!this.live) return;
    this.live = false;
    this.pool.release(this.ptr, this.blockBytes);
  }
}

/**
 * Page-locked host memory at a stable address (cuMemAllocHost). Async copies from it can be captured in a
 * CUDA graph: a replay reads whatever the host wrote there last, which is how slots are updated per step.
 */
export class PinnedBuffer {
  private live = true;
  /** The host bytes (a view over the pinned memory, no copy). */
  readonly bytesView: Uint8Array;
  private constructor(
    private readonly api: DriverApi,
    /** The pinned host pointer. */
    readonly handle: Handle,
    /** Size in bytes. */
    readonly bytes: number,
  ) {
    this.bytesView = native.view(handle, bytes);
  }

  /** Allocates `bytes` bytes of pinned host memory. */
  static allocate(api: DriverApi, bytes: number): PinnedBuffer {
    invariant(bytes > 0, "pinned buffer of zero bytes");
    const out: Handle[] = [null];
    check(api, api.cuMemAllocHost(out, bytes), "cuMemAllocHost_v2");
    return new PinnedBuffer(api, out[0], bytes);
  }

  /** Writes `data` at `offset` bytes. The caller must not overwrite bytes a pending copy still reads. */
  write(data: ArrayBufferView, offset = 0): void {
    if (!this.live) throw new CudaError("disposed", "pinned buffer used after dispose()");
    if (offset < 0 || offset + data.byteLength > this.bytes) {
      throw new CudaError(
        "bad-argument",
        `write of ${data.byteLength} bytes at ${offset} overruns a ${this.bytes}-byte pinned buffer`,
        { value: offset },
      );
    }
    this.bytesView.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), offset);
  }

  /** Enqueues (or, inside a capture, records) a copy of `bytes` bytes at `offset` into `dst` on `stream`. */
  copyTo(dst: DeviceBuffer, stream: CudaStream, bytes = Math.min(this.bytes, dst.bytes), offset = 0): void {
    if (!this.live) throw new CudaError("disposed", "pinned buffer used after dispose()");
    if (offset + bytes > this.bytes || bytes > dst.bytes)
      throw new CudaError("bad-argument", `pinned copy of ${bytes} bytes does not fit`, { value: bytes });
    const src = native.address(this.handle) + BigInt(offset);
    check(this.api, this.api.cuMemcpyHtoDAsync(dst.ptr, src, bytes, stream.handle), "cuMemcpyHtoDAsync_v2");
  }

  /**
   * Enqueues a copy of `bytes` bytes of `src` at `srcOffset` into this pinned memory at `offset` on `stream`; the
   * bytes are the host's to read once an event recorded after it has completed.
   */
  copyFrom(src: DeviceBuffer, stream: CudaStream, bytes: number, srcOffset = 0, offset = 0): void {
    if (!this.live) throw new CudaError("disposed", "pinned buffer used after dispose()");
    if (offset < 0 || srcOffset < 0 || offset + bytes > this.bytes || srcOffset + bytes > src.bytes)
      throw new CudaError("bad-argument", `pinned read-back of ${bytes} bytes does not fit`, { value: bytes });
    const dst = native.address(this.handle) + BigInt(offset);
    check(
      this.api,
      this.api.cuMemcpyDtoHAsync(dst, src.ptr + BigInt(srcOffset), bytes, stream.handle),
      "cuMemcpyDtoHAsync_v2",
    );
  }

  /** Frees the pinned memory. */
  dispose(): void {
    if (!this.live) return;
    this.live = false;
    check(this.api, this.api.cuMemFreeHost(this.handle), "cuMemFreeHost");
  }
}

// One Vulkan buffer with its own memory: device-local (filled through staging) or host-visible and
// coherent, mapped once for its lifetime so per-step host writes are plain memory stores.

import koffi from "koffi";
import { VulkanError } from "./errors.js";
import { check, createHandle } from "./vk/api.js";
import { MemoryProperty, SType } from "./vk/constants.js";
import type { VulkanDevice } from "./device.js";

/** `device`: device-local storage; `host`: host-visible, coherent, persistently mapped. */
export type BufferKind = "device" | "host";

/** A buffer and its memory. Create with {@link VulkanDevice.createBuffer}. */
export class VulkanBuffer {
  private view: Uint8Array | null = null;
  private disposed = false;

  private constructor(
    private readonly device: VulkanDevice,
    /** VkBuffer handle. */
    readonly handle: bigint,
    /** VkDeviceMemory handle. */
    readonly memory: bigint,
    /** Size in bytes. */
    readonly bytes: number,
    /** Where it lives. */
    readonly kind: BufferKind,
    /** A name for messages. */
    readonly name: string,
  ) {}

  /** Creates the buffer, allocates and binds its memory, and maps host-visible memory. */
  static create(device: VulkanDevice, bytes: number, kind: BufferKind, usage: number, name: string): VulkanBuffer {
    const f = device.vk.fn;
    const handle = createHandle(
      f.vkCreateBuffer!,
      "vkCreateBuffer",
      device.handle,
      {
        sType: SType.BUFFER_CREATE_INFO,
        pNext: null,
        flags: 0,
        size: bytes,
        usage,
        sharingMode: 0,
        queueFamilyIndexCount: 0,
        pQueueFamilyIndices: null,
      },
      null,
    );
    let memory = 0n;
    try {
      const req = {} as { size: number | bigint; alignment: number | bigint; memoryTypeBits: number };
      f.vkGetBufferMemoryRequirements!(device.handle, handle, req);
      const type =
        kind === "device"
          ? device.memoryType(req.memoryTypeBits, MemoryProperty.DEVICE_LOCAL)
          : device.memoryType(
              req.memoryTypeBits,
              MemoryProperty.HOST_VISIBLE | MemoryProperty.HOST_COHERENT,
              MemoryProperty.HOST_CACHED,
            );
      memory = createHandle(
        f.vkAllocateMemory!,
        "vkAllocateMemory",
        device.handle,
        { sType: SType.MEMORY_ALLOCATE_INFO, pNext: null, allocationSize: req.size, memoryTypeIndex: type },
        null,
      );
      check(f.vkBindBufferMemory!(device.handle, handle, memory, 0), "vkBindBufferMemory", name);
    } catch (e) {
      if (memory !== 0n) f.vkFreeMemory!(device.handle, memory, null);
      f.vkDestroyBuffer!(device.handle, handle, null);
      if (e instanceof VulkanError && e.code === "out-of-memory") {
        throw new VulkanError(
          "out-of-memory",
          `out of ${e.context.result === "VK_ERROR_OUT_OF_HOST_MEMORY" ? "host" : "device"} memory allocating ${bytes} bytes for ${name}`,
          { ...e.context, name, bytes },
        );
      }
      throw e;
    }
    const b = new VulkanBuffer(device, handle, memory, bytes, kind, name);
    if (kind === "host") {
      const p = new BigUint64Array(1);
      check(f.vkMapMemory!(device.handle, memory, 0, bytes, 0, p), "vkMapMemory", name);
      b.view = new Uint8Array(koffi.view(p[0]!, bytes));
    }
    return b;
  }

  /** The mapped bytes of a host-visible buffer (writes are visible to the next submission). */
  mapped(): Uint8Array {
    if (this.disposed) throw new VulkanError("disposed", `buffer ${this.name} was disposed`, { name: this.name });
    if (this.view === null)
      throw new VulkanError("out-of-range", `buffer ${this.name} is device-local and not mapped`, { name: this.name });
    return this.view;
  }

  /** Throws `out-of-range` unless [offset, offset + bytes) lies in the buffer. */
  checkRange(offset: number, bytes: number, what: string): void {
    if (this.disposed) throw new VulkanError("disposed", `buffer ${this.name} was disposed`, { name: this.name });
    if (!Number.isInteger(offset) || offset < 0 || bytes < 0 || offset + bytes > this.bytes) {
      throw new VulkanError(
        "out-of-range",
        `${what} of ${bytes} bytes at ${offset} outside ${this.name} (${this.bytes} bytes)`,
        { name: this.name, bytes: offset + bytes },
      );
    }
  }

  /** Frees the buffer and its memory (the device must not be using it). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    const f = this.device.vk.fn;
    if (this.view !== null) f.vkUnmapMemory!(this.device.handle, this.memory);
    this.view = null;
    f.vkDestroyBuffer!(this.device.handle, this.handle, null);
    f.vkFreeMemory!(this.device.handle, this.memory, null);
    this.device.forget(this);
  }
}

// A logical Vulkan device with one compute queue: device-local and host-visible buffers, command-buffer submission
// with a fence, and the codegen caps the device supports; its copies to and from the host are transfer.ts's.

import type { DeviceCaps } from "@poot/codegen";
import type { ElemType } from "@poot/kernel-dsl";
import type { BlobStore } from "@poot/executor/lowering";
import { VulkanError } from "./errors.js";
import { VulkanInstance, type InstanceOptions } from "./instance.js";
import {
  chooseDevice,
  createLogicalDevice,
  describePhysicalDevice,
  type DeviceRequirements,
  type PhysicalDeviceInfo,
} from "./physical.js";
import { check, createHandle, type VkLib } from "./vk/api.js";
import { BufferUsage, CommandPoolCreate, SType } from "./vk/constants.js";
import { VulkanBuffer, type BufferKind } from "./buffer.js";
import { UniformArena } from "./kernel.js";
import { PipelineCache } from "./pipeline.js";
import { recordBarrier, Transfers } from "./transfer.js";

/** Options of {@link VulkanDevice.open}. */
export interface DeviceOptions extends InstanceOptions, DeviceRequirements {
  /** Use the physical device at this enumeration index instead of choosing by type and memory. */
  readonly deviceIndex?: number;
  /**
   * Enable robustBufferAccess: out-of-bounds shader reads return zeros and writes are dropped instead of
   * touching other memory (slower on some drivers; a debugging aid for kernels that overrun). Default false.
   */
  readonly robustBufferAccess?: boolean;
  /** Fence wait limit in milliseconds before a submission is reported as a timeout (default 120000). */
  readonly timeoutMs?: number;
  /** Builds pipelines through a VkPipelineCache kept in this store across processes (see {@link PipelineCache}). */
  readonly codeCache?: BlobStore;
  /**
   * Keep the process's shared VkInstance when the last device on it is disposed (default true), so creating and
   * disposing devices does not create and destroy instances: NVIDIA's driver fails `vkCreateInstance` after about 30
   * such cycles in one process (decision 1650). `false` destroys it with the last device.
   */
  readonly retainInstance?: boolean;
}

const USAGE: Record<BufferKind, number> = {
  device: BufferUsage.STORAGE_BUFFER | BufferUsage.TRANSFER_SRC | BufferUsage.TRANSFER_DST,
  host: BufferUsage.STORAGE_BUFFER | BufferUsage.UNIFORM_BUFFER | BufferUsage.TRANSFER_SRC | BufferUsage.TRANSFER_DST,
};

/** One device, one compute queue. Every object it creates is freed by {@link VulkanDevice.dispose}. */
export class VulkanDevice {
  /** Compute pipelines, cached by SPIR-V hash and layout. */
  readonly pipelines: PipelineCache;
  /** Host-visible blocks for kernel uniforms. */
  readonly uniforms: UniformArena;
  private readonly buffers = new Set<VulkanBuffer>();
  /** Objects recorded on the device (recordings) that must end before it: disposed first by {@link dispose}. */
  private readonly dependents = new Set<{ dispose(): void }>();
  private readonly memoryTypes: { propertyFlags: number; heapIndex: number }[];
  private readonly fence: bigint;
  private readonly commandPool: bigint;
  private readonly transfers: Transfers;
  private disposed = false;

  private constructor(
    /** The instance (and validation messenger). */
    readonly instance: VulkanInstance,
    /** What the chosen physical device offers. */
    readonly info: PhysicalDeviceInfo,
    /** VkDevice handle. */
    readonly handle: bigint,
    /** The compute VkQueue. */
    readonly queue: bigint,
    private readonly timeoutMs: number,
    private readonly retainInstance: boolean,
    codeCache?: BlobStore,
  ) {
    const vk = this.vk;
    const mem = {} as { memoryTypeCount: number; memoryTypes: { propertyFlags: number; heapIndex: number }[] };
    vk.fn.vkGetPhysicalDeviceMemoryProperties!(info.handle, mem);
    this.memoryTypes = mem.memoryTypes.slice(0, mem.memoryTypeCount);
    this.fence = createHandle(
      vk.fn.vkCreateFence!,
      "vkCreateFence",
      handle,
      { sType: SType.FENCE_CREATE_INFO, pNext: null, flags: 0 },
      null,
    );
    try {
      this.commandPool = this.createCommandPool();
    } catch (e) {
      vk.fn.vkDestroyFence!(handle, this.fence, null);
      throw e;
    }
    try {
      this.transfers = new Transfers(this);
      this.pipelines = new PipelineCache(this, codeCache);
    } catch (e) {
      // The pool takes its command buffers with it.
      vk.fn.vkDestroyCommandPool!(handle, this.commandPool, null);
      vk.fn.vkDestroyFence!(handle, this.fence, null);
      throw e;
    }
    this.uniforms = new UniformArena(this);
  }

  private createCommandPool(): bigint {
    const vk = this.vk;
    return createHandle(
      vk.fn.vkCreateCommandPool!,
      "vkCreateCommandPool",
      this.handle,
      {
        sType: SType.COMMAND_POOL_CREATE_INFO,
        pNext: null,
        flags: CommandPoolCreate.RESET_COMMAND_BUFFER,
        queueFamilyIndex: this.info.computeQueueFamily,
      },
      null,
    );
  }

  /**
   * Opens a device: creates an instance (with validation when asked), picks a physical device meeting the
   * requirements, and creates a logical device with one compute queue and the 16-bit features it has.
   */
  static open(options: DeviceOptions = {}): VulkanDevice {
    const retain = options.retainInstance ?? true;
    const instance = VulkanInstance.shared(options);
    let handle = 0n;
    let dev: VulkanDevice | undefined;
    try {
      const infos = instance.physicalDevices().map((h, i) => describePhysicalDevice(instance.vk, h, i));
      let info: PhysicalDeviceInfo;
      if (options.deviceIndex !== undefined) {
        const d = infos[options.deviceIndex];
        if (d === undefined)
          throw new VulkanError("no-device", `no device at index ${options.deviceIndex} (${infos.length} found)`);
        info = chooseDevice([d], options);
      } else info = chooseDevice(infos, options);
      const vk = instance.vk;
      handle = createLogicalDevice(vk, info, options.robustBufferAccess === true);
      const q = new BigUint64Array(1);
      vk.fn.vkGetDeviceQueue!(handle, info.computeQueueFamily, 0, q);
      dev = new VulkanDevice(instance, info, handle, q[0]!, options.timeoutMs ?? 120_000, retain, options.codeCache);
      instance.throwOnValidationErrors("vkCreateDevice");
      return dev;
    } catch (e) {
      // Whatever was made before the failure ends here: the device (its constructor ended its own children) and
      // this holder's share of the instance.
      if (dev !== undefined) dev.dispose();
      else {
        if (handle !== 0n) instance.vk.fn.vkDestroyDevice!(handle, null);
        instance.release(retain);
      }
      throw e;
    }
  }

  /** The bindings. */
  get vk(): VkLib {
    return this.instance.vk;
  }

  /** What codegen may use on this device (a structural subset of graph-plan's caps). */
  get caps(): DeviceCaps {
    const i = this.info;
    const dtypes: ElemType[] = ["f32", "u32", "i32"];
    if (i.storage16) dtypes.push("f16", "bf16");
    return {
      maxWorkgroup: i.limits.maxWorkgroupInvocations,
      subgroupSize: i.subgroup.arithmetic && i.subgroup.shuffle && i.subgroup.basic ? i.subgroup.size : undefined,
      sharedBytes: i.limits.sharedBytes,
      dtypes,
      maxStorageBuffers: i.limits.maxPerStageStorageBuffers,
      f16: i.shaderFloat16,
      bf16: false,
    };
  }

  /** Picks a memory type allowed by `bits` with `required` properties, preferring `preferred` ones too. */
  memoryType(bits: number, required: number, preferred = 0): number {
    let best = -1;
    this.memoryTypes.forEach((t, i) => {
      if ((bits & (1 << i)) === 0 || (t.propertyFlags & required) !== required) return;
      if (
        best < 0 ||
        ((t.propertyFlags & preferred) === preferred &&
          (this.memoryTypes[best]!.propertyFlags & preferred) !== preferred)
      )
        best = i;
    });
    if (best < 0)
      throw new VulkanError(
        "no-memory-type",
        `no memory type with properties 0x${required.toString(16)} among 0x${bits.toString(16)}`,
      );
    return best;
  }

  /**
   * Creates a buffer of `bytes` (rounded up to 4): `device` is device-local (filled through staging),
   * `host` is host-visible and coherent, mapped for its lifetime (slots, uniforms, read-back).
   */
  createBuffer(bytes: number, kind: BufferKind, name = "buffer"): VulkanBuffer {
    this.live();
    const b = VulkanBuffer.create(this, Math.max(4, Math.ceil(bytes / 4) * 4), kind, USAGE[kind], name);
    this.buffers.add(b);
    return b;
  }

  /** Called by a buffer's dispose. */
  forget(b: VulkanBuffer): void {
    this.buffers.delete(b);
  }

  /** Registers an object made on the device (a recording) that {@link dispose} must end first, if still alive. */
  adopt(d: { dispose(): void }): void {
    this.dependents.add(d);
  }

  /** Called by an adopted object's dispose. */
  release(d: { dispose(): void }): void {
    this.dependents.delete(d);
  }

  /** Allocates a primary command buffer from the device's pool. */
  allocateCommandBuffer(): bigint {
    const out = new BigUint64Array(1);
    check(
      this.vk.fn.vkAllocateCommandBuffers!(
        this.handle,
        {
          sType: SType.COMMAND_BUFFER_ALLOCATE_INFO,
          pNext: null,
          commandPool: this.commandPool,
          level: 0,
          commandBufferCount: 1,
        },
        out,
      ),
      "vkAllocateCommandBuffers",
    );
    return out[0]!;
  }

  /** Frees a command buffer from the device's pool. */
  freeCommandBuffer(cmd: bigint): void {
    if (!this.disposed) this.vk.fn.vkFreeCommandBuffers!(this.handle, this.commandPool, 1, [cmd]);
  }

  /** Submits one recorded command buffer and waits for it (fence), then reports validation errors. */
  submit(cmd: bigint, what = "vkQueueSubmit"): void {
    this.live();
    const f = this.vk.fn;
    check(
      f.vkQueueSubmit!(
        this.queue,
        1,
        [
          {
            sType: SType.SUBMIT_INFO,
            pNext: null,
            waitSemaphoreCount: 0,
            pWaitSemaphores: null,
            pWaitDstStageMask: null,
            commandBufferCount: 1,
            pCommandBuffers: [cmd],
            signalSemaphoreCount: 0,
            pSignalSemaphores: null,
          },
        ],
        this.fence,
      ),
      "vkQueueSubmit",
      what,
    );
    const fences = new BigUint64Array([this.fence]);
    const r = check(
      f.vkWaitForFences!(this.handle, 1, fences, 1, BigInt(this.timeoutMs) * 1_000_000n),
      "vkWaitForFences",
      what,
    );
    if (r !== 0)
      throw new VulkanError("vk-result", `VK_TIMEOUT after ${this.timeoutMs} ms (${what})`, {
        call: "vkWaitForFences",
        result: "VK_TIMEOUT",
        code: r,
      });
    check(f.vkResetFences!(this.handle, 1, fences), "vkResetFences");
    this.instance.throwOnValidationErrors(what);
  }

  /** Records commands into the device's transfer command buffer with `record`, submits and waits. */
  oneShot(what: string, record: (cmd: bigint) => void): void {
    this.transfers.oneShot(what, record);
  }

  /** Writes `data` into `dst` at byte `offset`: directly when host-visible, through staging otherwise. */
  upload(dst: VulkanBuffer, data: ArrayBufferView, offset = 0): void {
    this.transfers.upload(dst, data, offset);
  }

  /** Copies `bytes` of `src` from byte `offset` to the host. */
  download(src: VulkanBuffer, offset = 0, bytes = src.bytes - offset): Uint8Array {
    return this.transfers.download(src, offset, bytes);
  }

  /** Fills `dst` with zeros (vkCmdFillBuffer). */
  zero(dst: VulkanBuffer): void {
    this.transfers.zero(dst);
  }

  /** Records a global memory barrier. */
  barrier(cmd: bigint, srcAccess: number, dstAccess: number, srcStage: number, dstStage: number): void {
    recordBarrier(this.vk, cmd, srcAccess, dstAccess, srcStage, dstStage);
  }

  /** Bytes held in buffers, by kind. */
  bytes(): { device: number; host: number } {
    let device = 0,
      host = 0;
    for (const b of this.buffers) {
      if (this.transfers.isStaging(b)) continue;
      if (b.kind === "device") device += b.bytes;
      else host += b.bytes;
    }
    return { device, host };
  }

  /** False once disposed. */
  get alive(): boolean {
    return !this.disposed;
  }

  /** Throws `disposed` after dispose. */
  live(): void {
    if (this.disposed) throw new VulkanError("disposed", "the Vulkan device was disposed");
  }

  /**
   * Waits for the queue, destroys every recording left, pipeline, buffer, pool and fence, and the device; then gives
   * back its share of the instance (kept for the next device unless `retainInstance: false`, decision 1650).
   */
  dispose(): void {
    if (this.disposed) return;
    const f = this.vk.fn;
    f.vkDeviceWaitIdle!(this.handle);
    // Recordings own query pools: a VkDevice must outlive every child (a leaked child is not destroyed with it).
    for (const d of [...this.dependents]) d.dispose();
    this.pipelines.dispose();
    for (const b of [...this.buffers]) b.dispose();
    this.disposed = true;
    f.vkDestroyCommandPool!(this.handle, this.commandPool, null);
    f.vkDestroyFence!(this.handle, this.fence, null);
    f.vkDestroyDevice!(this.handle, null);
    this.instance.release(this.retainInstance);
  }
}

// Host↔device copies of one Vulkan device: writes into device-local buffers through a kept host-visible staging
// buffer (chunked for large weights), read-backs through it, fills, all as one-shot submissions of one command buffer.

import type { VulkanBuffer } from "./buffer.js";
import type { VulkanDevice } from "./device.js";
import { check, type VkLib } from "./vk/api.js";
import { Access, CommandBufferUsage, PipelineStage, SType } from "./vk/constants.js";

/** Largest staged piece of one upload: the staging buffer stays bounded for large weights. */
const CHUNK = 64 << 20;

/** Smallest staging buffer, so small copies do not grow it one by one. */
const MIN_STAGING = 1 << 20;

/** Records a global memory barrier into `cmd`. */
export function recordBarrier(
  vk: VkLib,
  cmd: bigint,
  srcAccess: number,
  dstAccess: number,
  srcStage: number,
  dstStage: number,
): void {
  vk.fn.vkCmdPipelineBarrier!(
    cmd,
    srcStage,
    dstStage,
    0,
    1,
    [{ sType: SType.MEMORY_BARRIER, pNext: null, srcAccessMask: srcAccess, dstAccessMask: dstAccess }],
    0,
    null,
    0,
    null,
  );
}

/**
 * A device's transfers: its one-shot command buffer and its staging buffer. Owned by {@link VulkanDevice}, which
 * frees both (the command buffer with its pool, the staging buffer with its other buffers).
 */
export class Transfers {
  private readonly cmd: bigint;
  private staging: VulkanBuffer | null = null;

  constructor(private readonly device: VulkanDevice) {
    this.cmd = device.allocateCommandBuffer();
  }

  /** Whether `b` is the staging buffer (not counted among the device's bytes). */
  isStaging(b: VulkanBuffer): boolean {
    return b === this.staging;
  }

  /** Records commands into the transfer command buffer with `record`, submits and waits. */
  oneShot(what: string, record: (cmd: bigint) => void): void {
    const f = this.device.vk.fn;
    const cmd = this.cmd;
    check(f.vkResetCommandBuffer!(cmd, 0), "vkResetCommandBuffer");
    check(
      f.vkBeginCommandBuffer!(cmd, {
        sType: SType.COMMAND_BUFFER_BEGIN_INFO,
        pNext: null,
        flags: CommandBufferUsage.ONE_TIME_SUBMIT,
        pInheritanceInfo: null,
      }),
      "vkBeginCommandBuffer",
    );
    record(cmd);
    check(f.vkEndCommandBuffer!(cmd), "vkEndCommandBuffer");
    this.device.submit(cmd, what);
  }

  /** Writes `data` into `dst` at byte `offset`: directly when host-visible, through staging otherwise. */
  upload(dst: VulkanBuffer, data: ArrayBufferView, offset = 0): void {
    const src = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    dst.checkRange(offset, src.byteLength, "upload");
    if (dst.kind === "host") {
      dst.mapped().set(src, offset);
      return;
    }
    for (let at = 0; at < src.byteLength; at += CHUNK) {
      const part = src.subarray(at, Math.min(src.byteLength, at + CHUNK));
      const stage = this.stagingBuffer(part.byteLength);
      stage.mapped().set(part);
      this.oneShot(`upload to ${dst.name}`, (cmd) => {
        this.device.vk.fn.vkCmdCopyBuffer!(cmd, stage.handle, dst.handle, 1, [
          { srcOffset: 0, dstOffset: offset + at, size: part.byteLength },
        ]);
      });
    }
  }

  /** Copies `bytes` of `src` from byte `offset` to the host. */
  download(src: VulkanBuffer, offset = 0, bytes = src.bytes - offset): Uint8Array {
    src.checkRange(offset, bytes, "download");
    if (src.kind === "host") return src.mapped().slice(offset, offset + bytes);
    const stage = this.stagingBuffer(bytes);
    const vk = this.device.vk;
    this.oneShot(`download from ${src.name}`, (cmd) => {
      vk.fn.vkCmdCopyBuffer!(cmd, src.handle, stage.handle, 1, [{ srcOffset: offset, dstOffset: 0, size: bytes }]);
      recordBarrier(vk, cmd, Access.TRANSFER_WRITE, Access.HOST_READ, PipelineStage.TRANSFER, PipelineStage.HOST);
    });
    return stage.mapped().slice(0, bytes);
  }

  /** Fills `dst` with zeros (vkCmdFillBuffer). */
  zero(dst: VulkanBuffer): void {
    if (dst.kind === "host") {
      dst.mapped().fill(0);
      return;
    }
    this.oneShot(`zero ${dst.name}`, (cmd) => this.device.vk.fn.vkCmdFillBuffer!(cmd, dst.handle, 0, dst.bytes, 0));
  }

  /** A host-visible staging buffer of at least `bytes` rounded up to 4 (kept and grown). */
  private stagingBuffer(bytes: number): VulkanBuffer {
    const need = Math.ceil(bytes / 4) * 4;
    if (this.staging === null || this.staging.bytes < need) {
      this.staging?.dispose();
      this.staging = this.device.createBuffer(Math.max(need, MIN_STAGING), "host", "staging");
    }
    return this.staging;
  }
}

// A step recorded ONCE into a Vulkan command buffer (dispatches, copies, barriers, timestamps) and
// resubmitted as often as needed: per token only host-visible slot and uniform bytes change.

import type { VulkanBuffer } from "./buffer.js";
import type { VulkanDevice } from "./device.js";
import { VulkanError } from "./errors.js";
import type { BoundKernel } from "./kernel.js";
import { check, createHandle } from "./vk/api.js";
import { Access, PipelineBindPoint, PipelineStage, Query, ShaderStage, SType } from "./vk/constants.js";

/** One dispatch of a bound kernel. */
export interface DispatchStep {
  /** Discriminant. */
  readonly kind: "dispatch";
  /** The kernel with its arguments. */
  readonly kernel: BoundKernel;
  /** Workgroups in x, y, z. */
  readonly grid: readonly [number, number, number];
  /** Push-constant bytes (the pipeline layout must have a range that large). */
  readonly pushConstants?: Uint8Array;
  /** A label for timings (default: the kernel's name). */
  readonly label?: string;
}

/** A buffer-to-buffer copy (state moves, output staging). */
export interface CopyStep {
  /** Discriminant. */
  readonly kind: "copy";
  /** Source buffer and byte offset. */
  readonly src: VulkanBuffer;
  /** Source byte offset. */
  readonly srcOffset: number;
  /** Destination buffer. */
  readonly dst: VulkanBuffer;
  /** Destination byte offset. */
  readonly dstOffset: number;
  /** Bytes to copy. */
  readonly bytes: number;
  /** Several regions instead of one (offsets and sizes in bytes); `srcOffset`/`dstOffset`/`bytes` are then ignored. */
  readonly regions?: readonly { readonly srcOffset: number; readonly dstOffset: number; readonly size: number }[];
  /** A label for timings. */
  readonly label?: string;
}

/** A recorded command. */
export type Step = DispatchStep | CopyStep;

/** Options of {@link Recording.record}. */
export interface RecordOptions {
  /** Write a timestamp around every step (ignored when the queue has no timestamps). */
  readonly timestamps?: boolean;
  /** A name for messages. */
  readonly name?: string;
}

/** Time of one step of the last submission. */
export interface StepTiming {
  /** The step's label. */
  readonly label: string;
  /** Nanoseconds between the timestamps before and after it. */
  readonly ns: number;
}

const ALL_ACCESS =
  Access.SHADER_READ | Access.SHADER_WRITE | Access.TRANSFER_READ | Access.TRANSFER_WRITE | Access.UNIFORM_READ;
const ALL_STAGES = PipelineStage.COMPUTE_SHADER | PipelineStage.TRANSFER;

/** A command buffer holding one step, recorded once; {@link Recording.submit} replays it. */
export class Recording {
  /** Submissions so far. */
  submissions = 0;
  private disposed = false;

  private constructor(
    private readonly device: VulkanDevice,
    /** The VkCommandBuffer. */
    readonly cmd: bigint,
    private readonly queryPool: bigint,
    private readonly labels: string[],
    /** The name. */
    readonly name: string,
  ) {}

  /** Records `steps` in order, with a memory barrier between consecutive steps so each sees the last's writes. */
  static record(device: VulkanDevice, steps: readonly Step[], options: RecordOptions = {}): Recording {
    device.live();
    const f = device.vk.fn;
    const timestamps =
      options.timestamps === true && device.info.timestampValidBits > 0 && device.info.timestampPeriod > 0;
    const name = options.name ?? "step";
    const queryPool = timestamps
      ? createHandle(
          f.vkCreateQueryPool!,
          "vkCreateQueryPool",
          device.handle,
          {
            sType: SType.QUERY_POOL_CREATE_INFO,
            pNext: null,
            flags: 0,
            queryType: Query.TIMESTAMP,
            queryCount: steps.length + 1,
            pipelineStatistics: 0,
          },
          null,
        )
      : 0n;
    let cmd: bigint;
    try {
      cmd = device.allocateCommandBuffer();
    } catch (e) {
      if (queryPool !== 0n) f.vkDestroyQueryPool!(device.handle, queryPool, null);
      throw e;
    }
    const labels: string[] = [];
    // Made before recording, so a step that fails to record (a bad grid, a disposed buffer) frees what it holds.
    const rec = new Recording(device, cmd, queryPool, labels, name);
    try {
      rec.#record(steps, timestamps);
    } catch (e) {
      rec.dispose();
      throw e;
    }
    device.adopt(rec);
    return rec;
  }

  #record(steps: readonly Step[], timestamps: boolean): void {
    const { device, cmd, queryPool, labels } = this;
    const f = device.vk.fn;
    const max = device.info.limits.maxWorkgroupCount;
    // No ONE_TIME_SUBMIT: the buffer is resubmitted after each fence wait.
    check(
      f.vkBeginCommandBuffer!(cmd, {
        sType: SType.COMMAND_BUFFER_BEGIN_INFO,
        pNext: null,
        flags: 0,
        pInheritanceInfo: null,
      }),
      "vkBeginCommandBuffer",
    );
    if (timestamps) {
      f.vkCmdResetQueryPool!(cmd, queryPool, 0, steps.length + 1);
      f.vkCmdWriteTimestamp!(cmd, PipelineStage.TOP_OF_PIPE, queryPool, 0);
    }
    steps.forEach((s, i) => {
      if (i > 0) device.barrier(cmd, ALL_ACCESS, ALL_ACCESS, ALL_STAGES, ALL_STAGES);
      if (s.kind === "dispatch") {
        const p = s.kernel.kernel.pipeline;
        s.grid.forEach((g, axis) => {
          if (!Number.isInteger(g) || g < 1 || g > max[axis]!) {
            throw new VulkanError(
              "bad-launch",
              `grid [${s.grid.join(", ")}] of ${p.entryPoint}: axis ${axis} must be 1..${max[axis]}`,
              { name: p.entryPoint },
            );
          }
        });
        f.vkCmdBindPipeline!(cmd, PipelineBindPoint.COMPUTE, p.handle);
        f.vkCmdBindDescriptorSets!(cmd, PipelineBindPoint.COMPUTE, p.layout.layout, 0, 1, [s.kernel.set], 0, null);
        if (s.pushConstants !== undefined) {
          if (s.pushConstants.byteLength > p.layout.pushConstantBytes) {
            throw new VulkanError(
              "bad-launch",
              `${s.pushConstants.byteLength} push-constant bytes; the layout of ${p.entryPoint} has ${p.layout.pushConstantBytes}`,
              { name: p.entryPoint },
            );
          }
          f.vkCmdPushConstants!(
            cmd,
            p.layout.layout,
            ShaderStage.COMPUTE,
            0,
            s.pushConstants.byteLength,
            s.pushConstants,
          );
        }
        f.vkCmdDispatch!(cmd, s.grid[0], s.grid[1], s.grid[2]);
        labels.push(s.label ?? p.entryPoint);
      } else {
        const regions = (s.regions ?? [{ srcOffset: s.srcOffset, dstOffset: s.dstOffset, size: s.bytes }]).filter(
          (r) => r.size > 0,
        );
        for (const r of regions) {
          s.src.checkRange(r.srcOffset, r.size, "copy source");
          s.dst.checkRange(r.dstOffset, r.size, "copy destination");
        }
        if (regions.length > 0) f.vkCmdCopyBuffer!(cmd, s.src.handle, s.dst.handle, regions.length, regions);
        labels.push(s.label ?? `copy ${s.src.name} -> ${s.dst.name}`);
      }
      if (timestamps) f.vkCmdWriteTimestamp!(cmd, PipelineStage.BOTTOM_OF_PIPE, queryPool, i + 1);
    });
    // The host reads outputs from mapped memory after the fence: make shader and transfer writes visible to it.
    device.barrier(cmd, Access.SHADER_WRITE | Access.TRANSFER_WRITE, Access.HOST_READ, ALL_STAGES, PipelineStage.HOST);
    check(f.vkEndCommandBuffer!(cmd), "vkEndCommandBuffer");
    device.instance.throwOnValidationErrors(`recording ${this.name}`);
  }

  /** Submits the recorded step and waits for it to finish. */
  submit(): void {
    if (this.disposed) throw new VulkanError("disposed", `recording ${this.name} was disposed`, { name: this.name });
    this.device.submit(this.cmd, `submit ${this.name}`);
    this.submissions++;
  }

  /** Per-step times of the last submission, or null without timestamps. */
  timings(): StepTiming[] | null {
    if (this.queryPool === 0n || this.submissions === 0) return null;
    const n = this.labels.length + 1;
    const data = new BigUint64Array(n);
    check(
      this.device.vk.fn.vkGetQueryPoolResults!(
        this.device.handle,
        this.queryPool,
        0,
        n,
        8 * n,
        data,
        8,
        Query.RESULT_64 | Query.RESULT_WAIT,
      ),
      "vkGetQueryPoolResults",
    );
    const bits = this.device.info.timestampValidBits;
    const mask = bits >= 64 ? (1n << 64n) - 1n : (1n << BigInt(bits)) - 1n;
    const period = this.device.info.timestampPeriod;
    return this.labels.map((label, i) => ({
      label,
      ns: Number(((data[i + 1]! & mask) - (data[i]! & mask)) & mask) * period,
    }));
  }

  /** Frees the command buffer and query pool. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.device.release(this);
    if (!this.device.alive) return;
    this.device.freeCommandBuffer(this.cmd);
    if (this.queryPool !== 0n) this.device.vk.fn.vkDestroyQueryPool!(this.device.handle, this.queryPool, null);
  }
}

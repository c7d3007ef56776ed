// A codegen SPIR-V kernel on a Vulkan device: its pipeline built from the TargetCode's binding slots, and
// bound launches (descriptor set + uniform words in a host-visible arena, rewritable between submissions).

import type { TargetCode } from "@poot/codegen";
import type { Kernel } from "@poot/kernel-dsl";

/** What a launch needs of a kernel's IR: its name and its uniforms' types (a kernel-dsl Kernel has both). */
export type KernelSignature = Pick<Kernel, "name"> & {
  readonly uniforms: readonly { readonly name: string; readonly type: string }[];
};
import type { VulkanBuffer } from "./buffer.js";
import type { VulkanDevice } from "./device.js";
import { VulkanError } from "./errors.js";
import type { ComputePipeline, DescriptorKind } from "./pipeline.js";

/** A byte range of a buffer bound to one kernel argument. */
export interface BufferRange {
  /** The buffer. */
  readonly buffer: VulkanBuffer;
  /** Byte offset (a multiple of the device's minStorageBufferOffsetAlignment). */
  readonly offset?: number;
  /** Bytes (default: to the end of the buffer). */
  readonly bytes?: number;
}

/** Sub-allocates small uniform blocks from host-visible chunks, so launches do not each own an allocation. */
export class UniformArena {
  private chunk: VulkanBuffer | null = null;
  private used = 0;
  private static readonly CHUNK = 64 * 1024;

  constructor(private readonly device: VulkanDevice) {}

  /** A `bytes`-long block aligned for uniform-buffer binding. */
  allocate(bytes: number): { buffer: VulkanBuffer; offset: number; bytes: number } {
    const align = Math.max(16, this.device.info.limits.minUniformBufferOffsetAlignment);
    const size = Math.ceil(bytes / 16) * 16;
    let at = Math.ceil(this.used / align) * align;
    if (this.chunk === null || at + size > this.chunk.bytes) {
      this.chunk = this.device.createBuffer(Math.max(UniformArena.CHUNK, size), "host", "uniforms");
      at = 0;
    }
    this.used = at + size;
    return { buffer: this.chunk, offset: at, bytes: size };
  }
}

/** A kernel lowered to SPIR-V, with its compute pipeline on one device. */
export class VulkanKernel {
  /** The pipeline (shared with every kernel of the same SPIR-V). */
  readonly pipeline: ComputePipeline;

  private constructor(
    private readonly device: VulkanDevice,
    /** The kernel's name and uniform types (all a launch needs of its IR). */
    readonly kernel: KernelSignature,
    /** codegen's output for it. */
    readonly code: TargetCode,
    pushConstantBytes: number,
  ) {
    const kinds: DescriptorKind[] = code.bindings.map((b) => {
      if (b.kind === "buffer") return "storage";
      if (b.kind === "uniforms") return "uniform";
      throw new VulkanError(
        "bad-launch",
        `binding slot ${b.slot} of ${code.kernel} is '${b.kind}', which SPIR-V kernels do not use`,
        { name: code.kernel },
      );
    });
    this.pipeline = device.pipelines.pipeline(
      code.binary!,
      code.entryPoint,
      device.pipelines.layout(kinds, pushConstantBytes),
    );
  }

  /**
   * Builds the pipeline of `code` (must be SPIR-V lowered from `kernel`). `pushConstantBytes` adds a compute
   * push-constant range to the layout, for SPIR-V that declares a PushConstant block (codegen's kernels use
   * a uniform block; hand-written SPIR-V may use either).
   */
  static create(
    device: VulkanDevice,
    kernel: KernelSignature,
    code: TargetCode,
    options: { readonly pushConstantBytes?: number } = {},
  ): VulkanKernel {
    if (code.target !== "spirv" || code.binary === undefined) {
      throw new VulkanError("bad-launch", `kernel ${code.kernel} was lowered for ${code.target}, not SPIR-V`, {
        name: code.kernel,
      });
    }
    return new VulkanKernel(device, kernel, code, options.pushConstantBytes ?? 0);
  }

  /** Binds buffers by kernel buffer name and uniform values by name; returns a launch ready to record. */
  bind(
    buffers: Readonly<Record<string, VulkanBuffer | BufferRange>>,
    uniforms: Readonly<Record<string, number>> = {},
  ): BoundKernel {
    return new BoundKernel(this.device, this, buffers, uniforms);
  }
}

/** One kernel with its arguments bound: a descriptor set, and uniform words that can change between submissions. */
export class BoundKernel {
  /** The descriptor set (set 0). */
  readonly set: bigint;
  private readonly pool: bigint;
  private readonly device: VulkanDevice;
  private readonly uniformBlock: { buffer: VulkanBuffer; offset: number; bytes: number } | null = null;
  private readonly order: readonly string[] = [];

  constructor(
    device: VulkanDevice,
    readonly kernel: VulkanKernel,
    buffers: Readonly<Record<string, VulkanBuffer | BufferRange>>,
    uniforms: Readonly<Record<string, number>>,
  ) {
    const code = kernel.code;
    const align = device.info.limits.minStorageBufferOffsetAlignment;
    const ranges: { handle: bigint; offset: number; bytes: number }[] = [];
    for (const slot of code.bindings) {
      if (slot.kind === "buffer") {
        const arg = buffers[slot.buffer];
        if (arg === undefined)
          throw new VulkanError("bad-launch", `kernel ${code.kernel} needs buffer '${slot.buffer}'`, {
            name: slot.buffer,
          });
        const r: BufferRange = "handle" in arg ? { buffer: arg } : arg;
        const offset = r.offset ?? 0;
        const bytes = r.bytes ?? r.buffer.bytes - offset;
        r.buffer.checkRange(offset, bytes, `binding '${slot.buffer}' of ${code.kernel}`);
        if (offset % align !== 0)
          throw new VulkanError(
            "bad-launch",
            `buffer '${slot.buffer}' bound at offset ${offset}, not a multiple of ${align}`,
            { name: slot.buffer, bytes: offset },
          );
        ranges.push({ handle: r.buffer.handle, offset, bytes: Math.max(4, bytes) });
      } else if (slot.kind === "uniforms") {
        this.order = slot.order;
        this.uniformBlock = device.uniforms.allocate(4 * slot.order.length);
        ranges.push({
          handle: this.uniformBlock.buffer.handle,
          offset: this.uniformBlock.offset,
          bytes: this.uniformBlock.bytes,
        });
        for (const name of slot.order) {
          const v = uniforms[name];
          if (v === undefined)
            throw new VulkanError("bad-launch", `kernel ${code.kernel} needs uniform '${name}'`, { name });
          this.setUniform(name, v);
        }
      } else {
        throw new VulkanError("bad-launch", `binding slot ${slot.slot} of ${code.kernel} is '${slot.kind}'`, {
          name: code.kernel,
        });
      }
    }
    const d = device.pipelines.descriptorSet(kernel.pipeline.layout, ranges);
    this.set = d.set;
    this.pool = d.pool;
    this.device = device;
  }

  /** Returns the descriptor set to its pool (recordings that use it must be disposed first). */
  dispose(): void {
    if (this.device.alive) this.device.pipelines.freeDescriptorSet(this.set, this.pool);
  }

  /** Rewrites one uniform word; a recorded command buffer sees it at its next submission. */
  setUniform(name: string, value: number): void {
    const i = this.order.indexOf(name);
    if (i < 0 || this.uniformBlock === null)
      throw new VulkanError("bad-launch", `kernel ${this.kernel.code.kernel} has no uniform '${name}'`, { name });
    const type = this.kernel.kernel.uniforms.find((u) => u.name === name)?.type ?? "u32";
    const b = this.uniformBlock;
    const view = new DataView(b.buffer.mapped().buffer, b.buffer.mapped().byteOffset + b.offset + 4 * i, 4);
    if (type === "f32") view.setFloat32(0, value, true);
    else if (type === "i32") view.setInt32(0, value, true);
    else view.setUint32(0, value >>> 0, true);
  }
}

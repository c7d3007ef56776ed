// The Vulkan device of the generic staged program (@poot/executor's Device): buffers (slots host-visible, the rest
// device-local), SPIR-V pipelines, descriptor-set launches, and a step recorded into one command buffer that is
// resubmitted (Vulkan's replay). Submissions wait on the queue's fence, so `sync` has nothing left to wait for.

import { cpus } from "node:os";
import {
  DeviceError,
  type ByteRegion,
  type Device,
  type DeviceCaps,
  type DeviceOp,
  type LoweredBufferKind,
  type LoweredKernel,
  type LoweringTarget,
} from "@poot/executor";
import { makeTarget, type CompileOptions, type Target } from "@poot/graph-plan";
import { stridedFallback, synthCapsFrom } from "@poot/kernelgen";
import type { VulkanBuffer } from "../buffer.js";
import type { VulkanDevice } from "../device.js";
import { VulkanError } from "../errors.js";
import { BoundKernel, VulkanKernel } from "../kernel.js";
import { Recording, type Step } from "../recording.js";

/** The graph-plan target of a device, from what it reports. */
export function vulkanTarget(device: VulkanDevice, computeUnits?: number): Target {
  const i = device.info;
  return makeTarget({
    kind: "vulkan",
    caps: {
      maxWorkgroupSize: i.limits.maxWorkgroupInvocations,
      maxWorkgroupDims: i.limits.maxWorkgroupSize,
      maxGrid: i.limits.maxWorkgroupCount,
      sharedBytes: i.limits.sharedBytes,
      subgroupSize: device.caps.subgroupSize ?? 1,
      maxStorageBuffers: i.limits.maxPerStageStorageBuffers,
      maxBindingBytes: i.limits.maxStorageBufferRange,
      bindingAlignment: Math.max(4, i.limits.minStorageBufferOffsetAlignment),
      // bf16 is read as u32 words everywhere (no native bf16 type in SPIR-V); f16 natively with 16-bit storage.
      dtypes: { f16: i.storage16, bf16: false },
      matrixShapes: [],
      computeUnits: computeUnits ?? (i.type === "cpu" ? cpus().length : 64),
    },
  });
}

/** What programs are lowered for on `device`: SPIR-V, with strided fallback kernels for requests kernelgen declines. */
export function vulkanLowering(
  device: VulkanDevice,
  compile: CompileOptions = {},
  computeUnits?: number,
): LoweringTarget {
  const plan = vulkanTarget(device, computeUnits).caps as LoweringTarget["plan"];
  return {
    kind: "vulkan",
    language: "spirv",
    plan,
    synth: synthCapsFrom(plan),
    codegen: device.caps,
    compile,
    snapshotInPlace: false,
    variant: "vulkan-strided-fallback-1",
    fallback: stridedFallback,
  };
}

/** Options of {@link VulkanComputeDevice}. */
export interface VulkanComputeOptions {
  /** Dispose the VulkanDevice with this one. */
  readonly owns: boolean;
  /** Record per-dispatch timestamps (read with {@link VulkanComputeDevice.timings}). */
  readonly timestamps?: boolean;
  /** graph-plan options every program is lowered with. */
  readonly compile?: CompileOptions;
  /** Workgroups resident at once, for the planner's split decisions. */
  readonly computeUnits?: number;
}

/** A VulkanDevice as a Device of the generic staged program. */
export class VulkanComputeDevice implements Device<VulkanBuffer, VulkanKernel, BoundKernel, Recording> {
  readonly caps: DeviceCaps;

  constructor(
    readonly vk: VulkanDevice,
    private readonly options: VulkanComputeOptions,
  ) {
    this.caps = {
      kind: "vulkan",
      device: `${vk.info.name} (Vulkan ${vk.info.apiVersion})`,
      dtypes: ["f32", "f16", "bf16", "i32", "u32", "u8", "bool"],
      capture: true,
      deviceMemoryBytes: vk.info.deviceLocalBytes,
      lowering: vulkanLowering(vk, options.compile, options.computeUnits),
    };
  }

  allocate(bytes: number, kind: LoweredBufferKind | "snapshot", label: string): VulkanBuffer {
    try {
      return this.vk.createBuffer(Math.max(4, bytes), kind === "slot" ? "host" : "device", label);
    } catch (e) {
      if (e instanceof VulkanError && /OUT_OF_(DEVICE|HOST)_MEMORY/.test(e.message))
        throw new DeviceError("out-of-memory", `${bytes} bytes for ${label}: ${e.message}`, "vulkan");
      throw e;
    }
  }

  free(buffer: VulkanBuffer): void {
    if (this.vk.alive) buffer.dispose();
  }

  upload(buffer: VulkanBuffer, data: ArrayBufferView, offset = 0): void {
    this.vk.upload(buffer, data, offset);
  }

  download(buffer: VulkanBuffer, offset: number, bytes: number): Uint8Array {
    return this.vk.download(buffer, offset, bytes);
  }

  copy(from: VulkanBuffer, to: VulkanBuffer, regions: readonly ByteRegion[]): void {
    const r = Recording.record(this.vk, [this.#copy(from, to, regions, "copy")], { name: "copy" });
    try {
      r.submit();
    } finally {
      r.dispose();
    }
  }

  #copy(from: VulkanBuffer, to: VulkanBuffer, regions: readonly ByteRegion[], label: string): Step {
    return {
      kind: "copy",
      src: from,
      srcOffset: 0,
      dst: to,
      dstOffset: 0,
      bytes: 0,
      regions: regions.map((r) => ({ srcOffset: r.srcOffset, dstOffset: r.dstOffset, size: r.bytes })),
      label,
    };
  }

  zero(buffer: VulkanBuffer): void {
    this.vk.zero(buffer);
  }

  load(kernel: LoweredKernel): VulkanKernel {
    return VulkanKernel.create(this.vk, kernel, kernel.code);
  }

  loaded(): void {
    this.vk.pipelines.save();
  }

  bind(
    kernel: VulkanKernel,
    buffers: Readonly<Record<string, VulkanBuffer>>,
    uniforms: Readonly<Record<string, number>>,
  ): BoundKernel {
    return kernel.bind(buffers, uniforms);
  }

  unbind(launch: BoundKernel): void {
    launch.dispose();
  }

  record(ops: readonly DeviceOp<VulkanBuffer, BoundKernel>[], options: { readonly name: string }): Recording {
    const steps: Step[] = [];
    for (const op of ops) {
      // Slots live in host-visible memory: the write is what the next submission reads.
      if (op.kind === "launch") steps.push({ kind: "dispatch", kernel: op.launch, grid: op.grid, label: op.label });
      else if (op.kind === "copy") steps.push(this.#copy(op.from, op.to, op.regions, op.label));
    }
    return Recording.record(this.vk, steps, { timestamps: this.options.timestamps ?? false, name: options.name });
  }

  submit(recording: Recording): void {
    recording.submit();
  }

  release(recording: Recording): void {
    recording.dispose();
  }

  /** Per-dispatch times of a recording's last submission (null without timestamps). */
  timings(recording: Recording | undefined): ReturnType<Recording["timings"]> {
    return recording?.timings() ?? null;
  }

  sync(): void {
    // Every submission already waited on the queue's fence.
  }

  dispose(): void {
    if (this.options.owns) this.vk.dispose();
  }
}

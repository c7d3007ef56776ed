// Compute pipelines and their layouts: descriptor set layouts, pipeline layouts with push constants,
// shader modules from SPIR-V words, pipelines cached by SPIR-V hash, and descriptor sets from growing pools.

import { createHash } from "node:crypto";
import type { BlobStore } from "@poot/executor/lowering";
import { VulkanError } from "./errors.js";
import { check, createHandle } from "./vk/api.js";
import { DescriptorPoolCreate, DescriptorType, ShaderStage, SType } from "./vk/constants.js";
import type { VulkanDevice } from "./device.js";

/** What one binding of set 0 holds. */
export type DescriptorKind = "storage" | "uniform";

/** A descriptor set layout and the pipeline layout over it (set 0, optional push-constant range). */
export interface PipelineLayout {
  /** VkDescriptorSetLayout. */
  readonly setLayout: bigint;
  /** VkPipelineLayout. */
  readonly layout: bigint;
  /** Binding kinds, by binding number. */
  readonly bindings: readonly DescriptorKind[];
  /** Bytes of the compute push-constant range (0 = none). */
  readonly pushConstantBytes: number;
}

/** A compute pipeline. */
export interface ComputePipeline {
  /** VkPipeline. */
  readonly handle: bigint;
  /** Its layout. */
  readonly layout: PipelineLayout;
  /** Entry point. */
  readonly entryPoint: string;
  /** SHA-256 of the SPIR-V words (the cache key, with the entry point and layout). */
  readonly hash: string;
}

const SETS_PER_POOL = 256;
const VK_ERROR_OUT_OF_POOL_MEMORY = -1000069000;
const VK_ERROR_FRAGMENTED_POOL = -12;

/**
 * Pipelines, layouts and descriptor pools of one device; everything is destroyed with the device. With a `store`,
 * pipelines are built through a VkPipelineCache whose data is read from the store at creation (under the device's
 * `info.cacheId`) and written back by {@link PipelineCache.save} when pipelines were added.
 */
export class PipelineCache {
  private readonly layouts = new Map<string, PipelineLayout>();
  private readonly pipelines = new Map<string, ComputePipeline>();
  private readonly pools: bigint[] = [];
  /** The VkPipelineCache (0n without a store). */
  private readonly vkCache: bigint = 0n;
  private unsaved = false;
  /** Shader modules created (one per distinct SPIR-V binary), for tests and metrics. */
  modulesCreated = 0;

  constructor(
    private readonly device: VulkanDevice,
    private readonly store?: BlobStore,
  ) {
    if (store === undefined) return;
    const data = store.readBlob(device.info.cacheId);
    this.vkCache = createHandle(
      device.vk.fn.vkCreatePipelineCache!,
      "vkCreatePipelineCache",
      device.handle,
      {
        sType: SType.PIPELINE_CACHE_CREATE_INFO,
        pNext: null,
        flags: 0,
        initialDataSize: data?.byteLength ?? 0,
        pInitialData: data,
      },
      null,
    );
  }

  /** Writes the VkPipelineCache's data to the store when pipelines were built since the last save. */
  save(): void {
    if (this.store === undefined || !this.unsaved) return;
    const f = this.device.vk.fn;
    const size = [0];
    check(f.vkGetPipelineCacheData!(this.device.handle, this.vkCache, size, null), "vkGetPipelineCacheData");
    const data = Buffer.alloc(size[0]!);
    check(f.vkGetPipelineCacheData!(this.device.handle, this.vkCache, size, data), "vkGetPipelineCacheData");
    this.store.writeBlob(this.device.info.cacheId, data.subarray(0, size[0]!));
    this.unsaved = false;
  }

  /** The layout for `bindings` (set 0, binding i = bindings[i]) and a push-constant range of `pushConstantBytes`. */
  layout(bindings: readonly DescriptorKind[], pushConstantBytes = 0): PipelineLayout {
    const key = `${bindings.join(",")}|${pushConstantBytes}`;
    const hit = this.layouts.get(key);
    if (hit !== undefined) return hit;
    const max = this.device.info.limits.maxPushConstantsBytes;
    if (pushConstantBytes > max || pushConstantBytes % 4 !== 0) {
      throw new VulkanError(
        "bad-launch",
        `push constants of ${pushConstantBytes} bytes (multiple of 4, at most ${max})`,
        { bytes: pushConstantBytes },
      );
    }
    const d = this.device;
    const f = d.vk.fn;
    const setLayout = createHandle(
      f.vkCreateDescriptorSetLayout!,
      "vkCreateDescriptorSetLayout",
      d.handle,
      {
        sType: SType.DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        pNext: null,
        flags: 0,
        bindingCount: bindings.length,
        pBindings:
          bindings.length === 0
            ? null
            : bindings.map((k, i) => ({
                binding: i,
                descriptorType: k === "storage" ? DescriptorType.STORAGE_BUFFER : DescriptorType.UNIFORM_BUFFER,
                descriptorCount: 1,
                stageFlags: ShaderStage.COMPUTE,
                pImmutableSamplers: null,
              })),
      },
      null,
    );
    const layout = createHandle(
      f.vkCreatePipelineLayout!,
      "vkCreatePipelineLayout",
      d.handle,
      {
        sType: SType.PIPELINE_LAYOUT_CREATE_INFO,
        pNext: null,
        flags: 0,
        setLayoutCount: 1,
        pSetLayouts: [setLayout],
        pushConstantRangeCount: pushConstantBytes > 0 ? 1 : 0,
        pPushConstantRanges:
          pushConstantBytes > 0 ? [{ stageFlags: ShaderStage.COMPUTE, offset: 0, size: pushConstantBytes }] : null,
      },
      null,
    );
    const made: PipelineLayout = { setLayout, layout, bindings: [...bindings], pushConstantBytes };
    this.layouts.set(key, made);
    return made;
  }

  /** The compute pipeline of `spirv` (a SPIR-V binary) at `entryPoint` with `layout`, created once per hash. */
  pipeline(spirv: Uint8Array, entryPoint: string, layout: PipelineLayout): ComputePipeline {
    if (
      spirv.byteLength % 4 !== 0 ||
      spirv.byteLength < 20 ||
      new DataView(spirv.buffer, spirv.byteOffset).getUint32(0, true) !== 0x07230203
    ) {
      throw new VulkanError("bad-launch", `not a SPIR-V binary (${spirv.byteLength} bytes, bad magic or length)`, {
        name: entryPoint,
        bytes: spirv.byteLength,
      });
    }
    const hash = createHash("sha256").update(spirv).digest("hex");
    const key = `${hash}|${entryPoint}|${layout.bindings.join(",")}|${layout.pushConstantBytes}`;
    const hit = this.pipelines.get(key);
    if (hit !== undefined) return hit;
    const d = this.device;
    const f = d.vk.fn;
    const words = new Uint32Array(spirv.byteLength / 4);
    new Uint8Array(words.buffer).set(spirv);
    const module = createHandle(
      f.vkCreateShaderModule!,
      "vkCreateShaderModule",
      d.handle,
      { sType: SType.SHADER_MODULE_CREATE_INFO, pNext: null, flags: 0, codeSize: spirv.byteLength, pCode: words },
      null,
    );
    this.modulesCreated++;
    try {
      const out = new BigUint64Array(1);
      check(
        f.vkCreateComputePipelines!(
          d.handle,
          this.vkCache,
          1,
          [
            {
              sType: SType.COMPUTE_PIPELINE_CREATE_INFO,
              pNext: null,
              flags: 0,
              stage: {
                sType: SType.PIPELINE_SHADER_STAGE_CREATE_INFO,
                pNext: null,
                flags: 0,
                stage: ShaderStage.COMPUTE,
                module,
                pName: entryPoint,
                pSpecializationInfo: null,
              },
              layout: layout.layout,
              basePipelineHandle: 0n,
              basePipelineIndex: -1,
            },
          ],
          null,
          out,
        ),
        "vkCreateComputePipelines",
        entryPoint,
      );
      d.instance.throwOnValidationErrors(`vkCreateComputePipelines (${entryPoint})`);
      const made: ComputePipeline = { handle: out[0]!, layout, entryPoint, hash };
      this.pipelines.set(key, made);
      this.unsaved = true;
      return made;
    } finally {
      // The pipeline keeps what it needs; the module can go right away.
      f.vkDestroyShaderModule!(d.handle, module, null);
    }
  }

  /**
   * Allocates a descriptor set of `layout` and points binding i at `buffers[i]`; returns the set and the pool
   * it came from (for {@link PipelineCache.freeDescriptorSet}). A full pool is followed by a new one.
   */
  descriptorSet(
    layout: PipelineLayout,
    buffers: readonly { readonly handle: bigint; readonly offset?: number; readonly bytes: number }[],
  ): { readonly set: bigint; readonly pool: bigint } {
    const d = this.device;
    const f = d.vk.fn;
    const out = new BigUint64Array(1);
    const tryAllocate = (pool: bigint): number =>
      f.vkAllocateDescriptorSets!(
        d.handle,
        {
          sType: SType.DESCRIPTOR_SET_ALLOCATE_INFO,
          pNext: null,
          descriptorPool: pool,
          descriptorSetCount: 1,
          pSetLayouts: [layout.setLayout],
        },
        out,
      ) as number;
    let pool = this.pools[this.pools.length - 1];
    let r = pool === undefined ? VK_ERROR_OUT_OF_POOL_MEMORY : tryAllocate(pool);
    // Out of pool memory (or fragmented): start a new pool; freed sets return to the pool they came from.
    if (r === VK_ERROR_OUT_OF_POOL_MEMORY || r === VK_ERROR_FRAGMENTED_POOL) {
      pool = createHandle(
        f.vkCreateDescriptorPool!,
        "vkCreateDescriptorPool",
        d.handle,
        {
          sType: SType.DESCRIPTOR_POOL_CREATE_INFO,
          pNext: null,
          flags: DescriptorPoolCreate.FREE_DESCRIPTOR_SET,
          maxSets: SETS_PER_POOL,
          poolSizeCount: 2,
          // Each set of poot kernels binds few buffers; 16 storage descriptors per set on average is ample.
          pPoolSizes: [
            { type: DescriptorType.STORAGE_BUFFER, descriptorCount: SETS_PER_POOL * 16 },
            { type: DescriptorType.UNIFORM_BUFFER, descriptorCount: SETS_PER_POOL * 2 },
          ],
        },
        null,
      );
      this.pools.push(pool);
      r = tryAllocate(pool);
    }
    check(r, "vkAllocateDescriptorSets");
    const set = out[0]!;
    if (buffers.length > 0) {
      f.vkUpdateDescriptorSets!(
        d.handle,
        buffers.length,
        buffers.map((b, i) => ({
          sType: SType.WRITE_DESCRIPTOR_SET,
          pNext: null,
          dstSet: set,
          dstBinding: i,
          dstArrayElement: 0,
          descriptorCount: 1,
          descriptorType:
            layout.bindings[i] === "storage" ? DescriptorType.STORAGE_BUFFER : DescriptorType.UNIFORM_BUFFER,
          pImageInfo: null,
          pBufferInfo: [{ buffer: b.handle, offset: b.offset ?? 0, range: b.bytes }],
          pTexelBufferView: null,
        })),
        0,
        null,
      );
    }
    return { set, pool: pool! };
  }

  /** Returns a descriptor set to its pool (no command buffer that uses it may still run). */
  freeDescriptorSet(set: bigint, pool: bigint): void {
    if (this.pools.includes(pool))
      check(
        this.device.vk.fn.vkFreeDescriptorSets!(this.device.handle, pool, 1, new BigUint64Array([set])),
        "vkFreeDescriptorSets",
      );
  }

  /** Descriptor pools created so far. */
  get poolCount(): number {
    return this.pools.length;
  }

  /** Number of distinct pipelines created. */
  get size(): number {
    return this.pipelines.size;
  }

  /** Destroys pipelines, layouts and pools. */
  dispose(): void {
    const d = this.device;
    const f = d.vk.fn;
    for (const p of this.pipelines.values()) f.vkDestroyPipeline!(d.handle, p.handle, null);
    for (const l of this.layouts.values()) {
      f.vkDestroyPipelineLayout!(d.handle, l.layout, null);
      f.vkDestroyDescriptorSetLayout!(d.handle, l.setLayout, null);
    }
    for (const p of this.pools) f.vkDestroyDescriptorPool!(d.handle, p, null);
    if (this.vkCache !== 0n) f.vkDestroyPipelineCache!(d.handle, this.vkCache, null);
    this.pipelines.clear();
    this.layouts.clear();
    this.pools.length = 0;
  }
}

// Physical-device discovery: the properties, features and limits poot's compute path depends on, read
// through pNext chains, the choice of one device by those capabilities, and the logical device made on it.

import koffi, { type TypeObject } from "koffi";
import { VulkanError } from "./errors.js";
import { createHandle, type VkLib } from "./vk/api.js";
import { MemoryProperty, PhysicalDeviceType, QueueFlag, ShaderStage, SType, SubgroupFeature } from "./vk/constants.js";

/** What one physical device offers the compute path. */
export interface PhysicalDeviceInfo {
  /** Index in the loader's enumeration order. */
  readonly index: number;
  /** VkPhysicalDevice handle. */
  readonly handle: bigint;
  /** Device name, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)` or `NVIDIA H200`. */
  readonly name: string;
  /** `discrete`, `integrated`, `virtual`, `cpu` or `other`. */
  readonly type: "discrete" | "integrated" | "virtual" | "cpu" | "other";
  /** Vulkan API version the driver reports, as `major.minor.patch`. */
  readonly apiVersion: string;
  /** Queue family with compute support (a compute-only family preferred), or -1 when none. */
  readonly computeQueueFamily: number;
  /** Valid bits of timestamps on that family (0 = no timestamps). */
  readonly timestampValidBits: number;
  /** Nanoseconds per timestamp tick. */
  readonly timestampPeriod: number;
  /** Subgroup size, and whether compute shaders have basic, arithmetic and shuffle subgroup operations. */
  readonly subgroup: {
    readonly size: number;
    readonly basic: boolean;
    readonly arithmetic: boolean;
    readonly shuffle: boolean;
  };
  /** 16-bit storage-buffer access (`storageBuffer16BitAccess`). */
  readonly storage16: boolean;
  /** f16 arithmetic in shaders (`shaderFloat16`). */
  readonly shaderFloat16: boolean;
  /** 16-bit and 8-bit integer arithmetic in shaders. */
  readonly shaderInt16: boolean;
  /** Limits of compute dispatches and resources. */
  readonly limits: {
    readonly maxWorkgroupInvocations: number;
    readonly maxWorkgroupSize: readonly [number, number, number];
    readonly maxWorkgroupCount: readonly [number, number, number];
    readonly sharedBytes: number;
    readonly maxStorageBufferRange: number;
    readonly maxPerStageStorageBuffers: number;
    readonly maxPushConstantsBytes: number;
    readonly minStorageBufferOffsetAlignment: number;
    readonly minUniformBufferOffsetAlignment: number;
  };
  /** Bytes of device-local heaps. */
  readonly deviceLocalBytes: number;
  /** Names the pipeline-cache data this device and driver may read: `pipelineCacheUUID`, vendor, device, driver version. */
  readonly cacheId: string;
}

const TYPES = {
  [PhysicalDeviceType.DISCRETE_GPU]: "discrete",
  [PhysicalDeviceType.INTEGRATED_GPU]: "integrated",
  [PhysicalDeviceType.VIRTUAL_GPU]: "virtual",
  [PhysicalDeviceType.CPU]: "cpu",
} as const;

/** A pNext chain in native memory: each struct allocated, linked, and decoded back after the call. */
class Chain {
  private readonly ptrs: unknown[] = [];
  constructor(private readonly types: readonly (readonly [TypeObject, number])[]) {
    let next: unknown = null;
    for (let i = types.length - 1; i >= 0; i--) {
      const [t, sType] = types[i]!;
      const p = koffi.alloc(t, 1);
      koffi.encode(p, t, { sType, pNext: next });
      this.ptrs.unshift(p);
      next = p;
    }
  }
  /** The head of the chain (a pNext value). */
  get head(): unknown {
    return this.ptrs[0] ?? null;
  }
  /** Decodes struct `i` of the chain. */
  read<T>(i: number): T {
    return koffi.decode(this.ptrs[i], this.types[i]![0]) as T;
  }
  /** Frees the native memory. */
  free(): void {
    for (const p of this.ptrs) koffi.free(p);
  }
}

/** Reads what `handle` offers (properties, features, queue families, memory). */
export function describePhysicalDevice(vk: VkLib, handle: bigint, index: number): PhysicalDeviceInfo {
  const { fn, struct } = vk;
  const subgroupChain = new Chain([
    [struct.VkPhysicalDeviceSubgroupProperties!, SType.PHYSICAL_DEVICE_SUBGROUP_PROPERTIES],
  ]);
  const props2 = { sType: SType.PHYSICAL_DEVICE_PROPERTIES_2, pNext: subgroupChain.head } as Record<string, unknown>;
  fn.vkGetPhysicalDeviceProperties2!(handle, props2);
  const sg = subgroupChain.read<{ subgroupSize: number; supportedStages: number; supportedOperations: number }>(0);
  subgroupChain.free();
  const p = props2.properties as {
    deviceName: string;
    deviceType: number;
    apiVersion: number;
    driverVersion: number;
    vendorID: number;
    deviceID: number;
    pipelineCacheUUID: number[];
    limits: Record<string, number & number[]>;
  };
  const features = new Chain([
    [struct.VkPhysicalDeviceVulkan11Features!, SType.PHYSICAL_DEVICE_VULKAN_1_1_FEATURES],
    [struct.VkPhysicalDeviceVulkan12Features!, SType.PHYSICAL_DEVICE_VULKAN_1_2_FEATURES],
  ]);
  const f2 = { sType: SType.PHYSICAL_DEVICE_FEATURES_2, pNext: features.head } as Record<string, unknown>;
  fn.vkGetPhysicalDeviceFeatures2!(handle, f2);
  const v11 = features.read<{ storageBuffer16BitAccess: number }>(0);
  const v12 = features.read<{ shaderFloat16: number; shaderInt8: number }>(1);
  features.free();
  const core = f2.features as { shaderInt16: number };

  const nq = new Uint32Array(1);
  fn.vkGetPhysicalDeviceQueueFamilyProperties!(handle, nq, null);
  const families = Array.from({ length: nq[0]! }, () => ({}) as { queueFlags: number; timestampValidBits: number });
  fn.vkGetPhysicalDeviceQueueFamilyProperties!(handle, nq, families);
  // A compute-only family (async compute) is preferred; any family with compute otherwise.
  let family = families.findIndex(
    (q) => (q.queueFlags & QueueFlag.COMPUTE) !== 0 && (q.queueFlags & QueueFlag.GRAPHICS) === 0,
  );
  if (family < 0) family = families.findIndex((q) => (q.queueFlags & QueueFlag.COMPUTE) !== 0);

  const mem = {} as { memoryHeapCount: number; memoryHeaps: { size: number | bigint; flags: number }[] };
  fn.vkGetPhysicalDeviceMemoryProperties!(handle, mem);
  const deviceLocalBytes = mem.memoryHeaps
    .slice(0, mem.memoryHeapCount)
    .filter((h) => (h.flags & MemoryProperty.DEVICE_LOCAL) !== 0)
    .reduce((s, h) => s + Number(h.size), 0);

  const L = p.limits;
  const v = p.apiVersion;
  const computeOps = (sg.supportedStages & ShaderStage.COMPUTE) !== 0 ? sg.supportedOperations : 0;
  return {
    index,
    handle,
    name: p.deviceName,
    type: TYPES[p.deviceType as keyof typeof TYPES] ?? "other",
    apiVersion: `${v >>> 22}.${(v >>> 12) & 0x3ff}.${v & 0xfff}`,
    computeQueueFamily: family,
    timestampValidBits: family >= 0 ? families[family]!.timestampValidBits : 0,
    timestampPeriod: L.timestampPeriod as number,
    subgroup: {
      size: sg.subgroupSize,
      basic: (computeOps & SubgroupFeature.BASIC) !== 0,
      arithmetic: (computeOps & SubgroupFeature.ARITHMETIC) !== 0,
      shuffle: (computeOps & SubgroupFeature.SHUFFLE) !== 0,
    },
    storage16: v11.storageBuffer16BitAccess !== 0,
    shaderFloat16: v12.shaderFloat16 !== 0,
    shaderInt16: core.shaderInt16 !== 0,
    limits: {
      maxWorkgroupInvocations: L.maxComputeWorkGroupInvocations as number,
      maxWorkgroupSize: [...(L.maxComputeWorkGroupSize as number[])] as unknown as [number, number, number],
      maxWorkgroupCount: [...(L.maxComputeWorkGroupCount as number[])] as unknown as [number, number, number],
      sharedBytes: L.maxComputeSharedMemorySize as number,
      maxStorageBufferRange: L.maxStorageBufferRange as number,
      maxPerStageStorageBuffers: L.maxPerStageDescriptorStorageBuffers as number,
      maxPushConstantsBytes: L.maxPushConstantsSize as number,
      minStorageBufferOffsetAlignment: Number(L.minStorageBufferOffsetAlignment),
      minUniformBufferOffsetAlignment: Number(L.minUniformBufferOffsetAlignment),
    },
    deviceLocalBytes,
    cacheId: `vulkan-${Buffer.from(p.pipelineCacheUUID).toString("hex")}-${[p.vendorID, p.deviceID, p.driverVersion].map((x) => x.toString(16)).join("-")}`,
  };
}

/** What a device must offer to be chosen. */
export interface DeviceRequirements {
  /** Subgroup arithmetic and shuffles in compute shaders. */
  readonly subgroups?: boolean;
  /** 16-bit storage buffers. */
  readonly storage16?: boolean;
  /** f16 shader arithmetic. */
  readonly shaderFloat16?: boolean;
  /** Timestamp queries on the compute queue. */
  readonly timestamps?: boolean;
}

const RANK = { discrete: 0, integrated: 1, virtual: 2, cpu: 3, other: 4 } as const;

/** Why `info` does not meet `req`, or null when it does. */
export function unmetRequirement(info: PhysicalDeviceInfo, req: DeviceRequirements): string | null {
  if (info.computeQueueFamily < 0) return "no compute queue";
  if (req.subgroups === true && !(info.subgroup.arithmetic && info.subgroup.shuffle))
    return "no subgroup arithmetic/shuffle in compute";
  if (req.storage16 === true && !info.storage16) return "no 16-bit storage buffers";
  if (req.shaderFloat16 === true && !info.shaderFloat16) return "no shaderFloat16";
  if (req.timestamps === true && (info.timestampValidBits === 0 || info.timestampPeriod === 0))
    return "no timestamps on the compute queue";
  return null;
}

/**
 * Picks a device meeting `req`: discrete before integrated before virtual before CPU, then the larger
 * device-local memory. Throws `no-device` naming each device and what it lacks.
 */
export function chooseDevice(infos: readonly PhysicalDeviceInfo[], req: DeviceRequirements = {}): PhysicalDeviceInfo {
  const ok = infos.filter((d) => unmetRequirement(d, req) === null);
  if (ok.length === 0) {
    const why =
      infos.length === 0
        ? "the loader found no Vulkan device"
        : infos.map((d) => `${d.name}: ${unmetRequirement(d, req)}`).join("; ");
    throw new VulkanError("no-device", why);
  }
  return [...ok].sort((a, b) => RANK[a.type] - RANK[b.type] || b.deviceLocalBytes - a.deviceLocalBytes)[0]!;
}

/**
 * Creates a logical device on `info` with one compute queue and the 16-bit features the device has (16-bit storage,
 * shaderFloat16, shaderInt16), and robustBufferAccess when asked; returns its VkDevice handle.
 */
export function createLogicalDevice(vk: VkLib, info: PhysicalDeviceInfo, robustBufferAccess: boolean): bigint {
  const v11 = koffi.alloc(vk.struct.VkPhysicalDeviceVulkan11Features!, 1);
  const v12 = koffi.alloc(vk.struct.VkPhysicalDeviceVulkan12Features!, 1);
  koffi.encode(v12, vk.struct.VkPhysicalDeviceVulkan12Features!, {
    sType: SType.PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
    pNext: null,
    shaderFloat16: info.shaderFloat16 ? 1 : 0,
  });
  koffi.encode(v11, vk.struct.VkPhysicalDeviceVulkan11Features!, {
    sType: SType.PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
    pNext: v12,
    storageBuffer16BitAccess: info.storage16 ? 1 : 0,
  });
  const f2 = koffi.alloc(vk.struct.VkPhysicalDeviceFeatures2!, 1);
  koffi.encode(f2, vk.struct.VkPhysicalDeviceFeatures2!, {
    sType: SType.PHYSICAL_DEVICE_FEATURES_2,
    pNext: v11,
    features: {
      shaderInt16: info.shaderInt16 ? 1 : 0,
      robustBufferAccess: robustBufferAccess ? 1 : 0,
    },
  });
  try {
    return createHandle(
      vk.fn.vkCreateDevice!,
      "vkCreateDevice",
      info.handle,
      {
        sType: SType.DEVICE_CREATE_INFO,
        pNext: f2,
        flags: 0,
        queueCreateInfoCount: 1,
        pQueueCreateInfos: [
          {
            sType: SType.DEVICE_QUEUE_CREATE_INFO,
            pNext: null,
            flags: 0,
            queueFamilyIndex: info.computeQueueFamily,
            queueCount: 1,
            pQueuePriorities: [1],
          },
        ],
        enabledLayerCount: 0,
        ppEnabledLayerNames: null,
        enabledExtensionCount: 0,
        ppEnabledExtensionNames: null,
        pEnabledFeatures: null,
      },
      null,
    );
  } finally {
    koffi.free(f2);
    koffi.free(v11);
    koffi.free(v12);
  }
}

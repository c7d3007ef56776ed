// A ledger of live Vulkan objects, kept by wrapping the loaded bindings' create/allocate and destroy/free functions:
// what a dispose path leaves behind shows as a type with live handles, whatever the driver does with them (lavapipe
// shows no symptom of a leaked VkFence or VkDevice; NVIDIA's driver does, decision 1650). A test instrument, so it
// lives here rather than in @poot/backend-vulkan; it needs only the shape of the bindings (`loadVulkan()`'s `fn`).

/** Live handles by object type (`Instance`, `Device`, `Fence`, `Pipeline`, `Mapping`, ...). */
export type VulkanObjectCounts = Readonly<Record<string, number>>;

/** What {@link trackVulkanObjects} returns. */
export interface VulkanObjectLedger {
  /** Handles created and not destroyed yet, by type (types with none left are omitted). */
  live(): VulkanObjectCounts;
  /** Handles created since tracking began, by type. */
  created(): VulkanObjectCounts;
  /** Puts the bindings' own functions back (the ledger stops counting). */
  stop(): void;
}

type Handle = bigint;

/** The handle type a create/allocate function makes (its last argument is the output array). */
const CREATES: Readonly<Record<string, string>> = {
  vkCreateInstance: "Instance",
  vkCreateDevice: "Device",
  vkAllocateMemory: "DeviceMemory",
  vkCreateBuffer: "Buffer",
  vkCreateFence: "Fence",
  vkCreateSemaphore: "Semaphore",
  vkCreateQueryPool: "QueryPool",
  vkCreateCommandPool: "CommandPool",
  vkCreateShaderModule: "ShaderModule",
  vkCreatePipelineCache: "PipelineCache",
  vkCreatePipelineLayout: "PipelineLayout",
  vkCreateDescriptorSetLayout: "DescriptorSetLayout",
  vkCreateDescriptorPool: "DescriptorPool",
  vkCreateSampler: "Sampler",
};

/** The handle type a destroy/free function ends, and the index of the handle among its arguments. */
const DESTROYS: Readonly<Record<string, readonly [string, number]>> = {
  vkDestroyInstance: ["Instance", 0],
  vkDestroyDevice: ["Device", 0],
  vkFreeMemory: ["DeviceMemory", 1],
  vkDestroyBuffer: ["Buffer", 1],
  vkDestroyFence: ["Fence", 1],
  vkDestroySemaphore: ["Semaphore", 1],
  vkDestroyQueryPool: ["QueryPool", 1],
  vkDestroyCommandPool: ["CommandPool", 1],
  vkDestroyShaderModule: ["ShaderModule", 1],
  vkDestroyPipelineCache: ["PipelineCache", 1],
  vkDestroyPipelineLayout: ["PipelineLayout", 1],
  vkDestroyDescriptorSetLayout: ["DescriptorSetLayout", 1],
  vkDestroyDescriptorPool: ["DescriptorPool", 1],
  vkDestroySampler: ["Sampler", 1],
  vkDestroyPipeline: ["Pipeline", 1],
  vkUnmapMemory: ["Mapping", 1],
};

/** Pool children: freed one by one, or all at once when their pool is destroyed (valid Vulkan). */
const CHILDREN: Readonly<Record<string, string>> = { CommandPool: "CommandBuffer", DescriptorPool: "DescriptorSet" };

const handles = (a: unknown, n: number): Handle[] =>
  Array.from({ length: n }, (_, i) => BigInt((a as ArrayLike<bigint | number>)[i] ?? 0));

/**
 * Starts counting the Vulkan objects made and ended through `vk`'s functions (every caller in the process that uses
 * these bindings: devices, executors, probes). Objects of extension functions (the debug messenger) are not counted.
 * One ledger at a time; {@link VulkanObjectLedger.stop} ends it.
 */
export function trackVulkanObjects(vk: { readonly fn: object }): VulkanObjectLedger {
  const fn = vk.fn as Record<string, (...args: unknown[]) => unknown>;
  const original = { ...fn };
  /** type -> live handle -> parent pool (0n without one). */
  const live = new Map<string, Map<Handle, Handle>>();
  const created = new Map<string, number>();
  const add = (type: string, hs: readonly Handle[], parent = 0n): void => {
    const m = live.get(type) ?? new Map<Handle, Handle>();
    live.set(type, m);
    for (const h of hs) if (h !== 0n) m.set(h, parent);
    created.set(type, (created.get(type) ?? 0) + hs.length);
  };
  const end = (type: string, hs: readonly Handle[]): void => {
    for (const h of hs) live.get(type)?.delete(h);
    const child = CHILDREN[type];
    if (child === undefined) return;
    const kids = live.get(child);
    for (const [h, pool] of kids ?? []) if (hs.includes(pool)) kids!.delete(h);
  };
  const wrap = (name: string, after: (args: unknown[], result: unknown) => void): void => {
    const f = original[name];
    if (f === undefined) return;
    fn[name] = (...args: unknown[]) => {
      const r: unknown = f(...args);
      if (typeof r !== "number" || r >= 0) after(args, r);
      return r;
    };
  };
  for (const [name, type] of Object.entries(CREATES)) wrap(name, (a) => add(type, handles(a.at(-1), 1)));
  for (const [name, [type, at]] of Object.entries(DESTROYS))
    wrap(name, (a) => end(type, [BigInt((a[at] as bigint | number | null) ?? 0)]));
  wrap("vkCreateComputePipelines", (a) => add("Pipeline", handles(a[5], Number(a[2]))));
  wrap("vkMapMemory", (a) => add("Mapping", [BigInt(a[1] as bigint)]));
  type AllocateInfo = { commandPool?: Handle; commandBufferCount?: number; descriptorPool?: Handle };
  wrap("vkAllocateCommandBuffers", (a) => {
    const info = a[1] as AllocateInfo;
    add("CommandBuffer", handles(a[2], info.commandBufferCount ?? 1), info.commandPool);
  });
  wrap("vkAllocateDescriptorSets", (a) => {
    const info = a[1] as AllocateInfo & { descriptorSetCount?: number };
    add("DescriptorSet", handles(a[2], info.descriptorSetCount ?? 1), info.descriptorPool);
  });
  wrap("vkFreeCommandBuffers", (a) => end("CommandBuffer", handles(a[3], Number(a[2]))));
  wrap("vkFreeDescriptorSets", (a) => end("DescriptorSet", handles(a[3], Number(a[2]))));
  const counts = (m: Map<string, number>): VulkanObjectCounts =>
    Object.fromEntries([...m].filter(([, n]) => n > 0).sort(([a], [b]) => a.localeCompare(b)));
  return {
    live: () => counts(new Map([...live].map(([t, hs]) => [t, hs.size]))),
    created: () => counts(created),
    stop: () => Object.assign(fn, original),
  };
}

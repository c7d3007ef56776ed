// The Vulkan enum and flag values poot uses (values from vulkan_core.h), grouped by the enum they belong to.
// Only what the compute path needs; names keep the header's spelling minus the common prefix.

/** VkStructureType values. */
export const SType = {
  APPLICATION_INFO: 0,
  INSTANCE_CREATE_INFO: 1,
  DEVICE_QUEUE_CREATE_INFO: 2,
  DEVICE_CREATE_INFO: 3,
  SUBMIT_INFO: 4,
  MEMORY_ALLOCATE_INFO: 5,
  FENCE_CREATE_INFO: 8,
  QUERY_POOL_CREATE_INFO: 11,
  BUFFER_CREATE_INFO: 12,
  SHADER_MODULE_CREATE_INFO: 16,
  PIPELINE_CACHE_CREATE_INFO: 17,
  PIPELINE_SHADER_STAGE_CREATE_INFO: 18,
  COMPUTE_PIPELINE_CREATE_INFO: 29,
  PIPELINE_LAYOUT_CREATE_INFO: 30,
  DESCRIPTOR_SET_LAYOUT_CREATE_INFO: 32,
  DESCRIPTOR_POOL_CREATE_INFO: 33,
  DESCRIPTOR_SET_ALLOCATE_INFO: 34,
  WRITE_DESCRIPTOR_SET: 35,
  COMMAND_POOL_CREATE_INFO: 39,
  COMMAND_BUFFER_ALLOCATE_INFO: 40,
  COMMAND_BUFFER_BEGIN_INFO: 42,
  MEMORY_BARRIER: 46,
  PHYSICAL_DEVICE_VULKAN_1_1_FEATURES: 49,
  PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: 51,
  PHYSICAL_DEVICE_FEATURES_2: 1000059000,
  PHYSICAL_DEVICE_PROPERTIES_2: 1000059001,
  PHYSICAL_DEVICE_SUBGROUP_PROPERTIES: 1000094000,
  DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT: 1000128004,
} as const;

/** VkPhysicalDeviceType values. */
export const PhysicalDeviceType = { OTHER: 0, INTEGRATED_GPU: 1, DISCRETE_GPU: 2, VIRTUAL_GPU: 3, CPU: 4 } as const;

/** VkQueueFlagBits. */
export const QueueFlag = { GRAPHICS: 1, COMPUTE: 2, TRANSFER: 4 } as const;

/** VkMemoryPropertyFlagBits. */
export const MemoryProperty = { DEVICE_LOCAL: 1, HOST_VISIBLE: 2, HOST_COHERENT: 4, HOST_CACHED: 8 } as const;

/** VkBufferUsageFlagBits. */
export const BufferUsage = { TRANSFER_SRC: 1, TRANSFER_DST: 2, UNIFORM_BUFFER: 0x10, STORAGE_BUFFER: 0x20 } as const;

/** VkDescriptorType values. */
export const DescriptorType = { UNIFORM_BUFFER: 6, STORAGE_BUFFER: 7 } as const;

/** VkShaderStageFlagBits. */
export const ShaderStage = { COMPUTE: 0x20 } as const;

/** VkPipelineBindPoint values. */
export const PipelineBindPoint = { COMPUTE: 1 } as const;

/** VkPipelineStageFlagBits. */
export const PipelineStage = {
  TOP_OF_PIPE: 0x1,
  COMPUTE_SHADER: 0x800,
  TRANSFER: 0x1000,
  BOTTOM_OF_PIPE: 0x2000,
  HOST: 0x4000,
} as const;

/** VkAccessFlagBits. */
export const Access = {
  UNIFORM_READ: 0x8,
  SHADER_READ: 0x20,
  SHADER_WRITE: 0x40,
  TRANSFER_READ: 0x800,
  TRANSFER_WRITE: 0x1000,
  HOST_READ: 0x2000,
  HOST_WRITE: 0x4000,
} as const;

/** VkCommandPoolCreateFlagBits. */
export const CommandPoolCreate = { RESET_COMMAND_BUFFER: 0x2 } as const;

/** VkCommandBufferUsageFlagBits. */
export const CommandBufferUsage = { ONE_TIME_SUBMIT: 0x1, SIMULTANEOUS_USE: 0x4 } as const;

/** VkDescriptorPoolCreateFlagBits. */
export const DescriptorPoolCreate = { FREE_DESCRIPTOR_SET: 0x1 } as const;

/** VkQueryType and VkQueryResultFlagBits. */
export const Query = { TIMESTAMP: 2, RESULT_64: 0x1, RESULT_WAIT: 0x2 } as const;

/** VkSubgroupFeatureFlagBits. */
export const SubgroupFeature = {
  BASIC: 0x1,
  VOTE: 0x2,
  ARITHMETIC: 0x4,
  BALLOT: 0x8,
  SHUFFLE: 0x10,
  SHUFFLE_RELATIVE: 0x20,
} as const;

/** VkDebugUtilsMessageSeverityFlagBitsEXT. */
export const Severity = { VERBOSE: 0x1, INFO: 0x10, WARNING: 0x100, ERROR: 0x1000 } as const;

/** VkDebugUtilsMessageTypeFlagBitsEXT (general, validation, performance). */
export const MessageType = { GENERAL: 0x1, VALIDATION: 0x2, PERFORMANCE: 0x4 } as const;

// C declarations of the Vulkan structs poot uses, copied verbatim from vulkan_core.h (Vulkan-Headers 1.3.239).
// Generated text (tools: a copy of each `typedef struct` body); src/vk/cstruct.ts turns them into koffi types.

/** Struct name and its C member list, in dependency order (a struct appears after the structs it embeds). */
export const VK_STRUCTS: readonly (readonly [string, string])[] = [
  ["VkExtent3D", "uint32_t width; uint32_t height; uint32_t depth;"],
  [
    "VkApplicationInfo",
    "VkStructureType sType; const void* pNext; const char* pApplicationName; uint32_t applicationVersion; " +
      "const char* pEngineName; uint32_t engineVersion; uint32_t apiVersion;",
  ],
  [
    "VkInstanceCreateInfo",
    "VkStructureType sType; const void* pNext; VkInstanceCreateFlags flags; const VkApplicationInfo* " +
      "pApplicationInfo; uint32_t enabledLayerCount; const char* const* ppEnabledLayerNames; uint32_t " +
      "enabledExtensionCount; const char* const* ppEnabledExtensionNames;",
  ],
  [
    "VkLayerProperties",
    "char layerName[VK_MAX_EXTENSION_NAME_SIZE]; uint32_t specVersion; uint32_t implementationVersion; char " +
      "description[VK_MAX_DESCRIPTION_SIZE];",
  ],
  ["VkExtensionProperties", "char extensionName[VK_MAX_EXTENSION_NAME_SIZE]; uint32_t specVersion;"],
  [
    "VkPhysicalDeviceLimits",
    "uint32_t maxImageDimension1D; uint32_t maxImageDimension2D; uint32_t maxImageDimension3D; uint32_t " +
      "maxImageDimensionCube; uint32_t maxImageArrayLayers; uint32_t maxTexelBufferElements; uint32_t " +
      "maxUniformBufferRange; uint32_t maxStorageBufferRange; uint32_t maxPushConstantsSize; uint32_t " +
      "maxMemoryAllocationCount; uint32_t maxSamplerAllocationCount; VkDeviceSize bufferImageGranularity; " +
      "VkDeviceSize sparseAddressSpaceSize; uint32_t maxBoundDescriptorSets; uint32_t " +
      "maxPerStageDescriptorSamplers; uint32_t maxPerStageDescriptorUniformBuffers; uint32_t " +
      "maxPerStageDescriptorStorageBuffers; uint32_t maxPerStageDescriptorSampledImages; uint32_t " +
      "maxPerStageDescriptorStorageImages; uint32_t maxPerStageDescriptorInputAttachments; uint32_t " +
      "maxPerStageResources; uint32_t maxDescriptorSetSamplers; uint32_t maxDescriptorSetUniformBuffers; " +
      "uint32_t maxDescriptorSetUniformBuffersDynamic; uint32_t maxDescriptorSetStorageBuffers; uint32_t " +
      "maxDescriptorSetStorageBuffersDynamic; uint32_t maxDescriptorSetSampledImages; uint32_t " +
      "maxDescriptorSetStorageImages; uint32_t maxDescriptorSetInputAttachments; uint32_t " +
      "maxVertexInputAttributes; uint32_t maxVertexInputBindings; uint32_t maxVertexInputAttributeOffset; " +
      "uint32_t maxVertexInputBindingStride; uint32_t maxVertexOutputComponents; uint32_t " +
      "maxTessellationGenerationLevel; uint32_t maxTessellationPatchSize; uint32_t " +
      "maxTessellationControlPerVertexInputComponents; uint32_t " +
      "maxTessellationControlPerVertexOutputComponents; uint32_t " +
      "maxTessellationControlPerPatchOutputComponents; uint32_t maxTessellationControlTotalOutputComponents; " +
      "uint32_t maxTessellationEvaluationInputComponents; uint32_t maxTessellationEvaluationOutputComponents; " +
      "uint32_t maxGeometryShaderInvocations; uint32_t maxGeometryInputComponents; uint32_t " +
      "maxGeometryOutputComponents; uint32_t maxGeometryOutputVertices; uint32_t " +
      "maxGeometryTotalOutputComponents; uint32_t maxFragmentInputComponents; uint32_t " +
      "maxFragmentOutputAttachments; uint32_t maxFragmentDualSrcAttachments; uint32_t " +
      "maxFragmentCombinedOutputResources; uint32_t maxComputeSharedMemorySize; uint32_t " +
      "maxComputeWorkGroupCount[3]; uint32_t maxComputeWorkGroupInvocations; uint32_t " +
      "maxComputeWorkGroupSize[3]; uint32_t subPixelPrecisionBits; uint32_t subTexelPrecisionBits; uint32_t " +
      "mipmapPrecisionBits; uint32_t maxDrawIndexedIndexValue; uint32_t maxDrawIndirectCount; float " +
      "maxSamplerLodBias; float maxSamplerAnisotropy; uint32_t maxViewports; uint32_t maxViewportDimensions[2]; " +
      "float viewportBoundsRange[2]; uint32_t viewportSubPixelBits; size_t minMemoryMapAlignment; VkDeviceSize " +
      "minTexelBufferOffsetAlignment; VkDeviceSize minUniformBufferOffsetAlignment; VkDeviceSize " +
      "minStorageBufferOffsetAlignment; int32_t minTexelOffset; uint32_t maxTexelOffset; int32_t " +
      "minTexelGatherOffset; uint32_t maxTexelGatherOffset; float minInterpolationOffset; float " +
      "maxInterpolationOffset; uint32_t subPixelInterpolationOffsetBits; uint32_t maxFramebufferWidth; uint32_t " +
      "maxFramebufferHeight; uint32_t maxFramebufferLayers; VkSampleCountFlags framebufferColorSampleCounts; " +
      "VkSampleCountFlags framebufferDepthSampleCounts; VkSampleCountFlags framebufferStencilSampleCounts; " +
      "VkSampleCountFlags framebufferNoAttachmentsSampleCounts; uint32_t maxColorAttachments; " +
      "VkSampleCountFlags sampledImageColorSampleCounts; VkSampleCountFlags sampledImageIntegerSampleCounts; " +
      "VkSampleCountFlags sampledImageDepthSampleCounts; VkSampleCountFlags sampledImageStencilSampleCounts; " +
      "VkSampleCountFlags storageImageSampleCounts; uint32_t maxSampleMaskWords; VkBool32 " +
      "timestampComputeAndGraphics; float timestampPeriod; uint32_t maxClipDistances; uint32_t " +
      "maxCullDistances; uint32_t maxCombinedClipAndCullDistances; uint32_t discreteQueuePriorities; float " +
      "pointSizeRange[2]; float lineWidthRange[2]; float pointSizeGranularity; float lineWidthGranularity; " +
      "VkBool32 strictLines; VkBool32 standardSampleLocations; VkDeviceSize optimalBufferCopyOffsetAlignment; " +
      "VkDeviceSize optimalBufferCopyRowPitchAlignment; VkDeviceSize nonCoherentAtomSize;",
  ],
  [
    "VkPhysicalDeviceSparseProperties",
    "VkBool32 residencyStandard2DBlockShape; VkBool32 residencyStandard2DMultisampleBlockShape; VkBool32 " +
      "residencyStandard3DBlockShape; VkBool32 residencyAlignedMipSize; VkBool32 residencyNonResidentStrict;",
  ],
  [
    "VkPhysicalDeviceProperties",
    "uint32_t apiVersion; uint32_t driverVersion; uint32_t vendorID; uint32_t deviceID; VkPhysicalDeviceType " +
      "deviceType; char deviceName[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE]; uint8_t pipelineCacheUUID[VK_UUID_SIZE]; " +
      "VkPhysicalDeviceLimits limits; VkPhysicalDeviceSparseProperties sparseProperties;",
  ],
  [
    "VkPhysicalDeviceFeatures",
    "VkBool32 robustBufferAccess; VkBool32 fullDrawIndexUint32; VkBool32 imageCubeArray; VkBool32 " +
      "independentBlend; VkBool32 geometryShader; VkBool32 tessellationShader; VkBool32 sampleRateShading; " +
      "VkBool32 dualSrcBlend; VkBool32 logicOp; VkBool32 multiDrawIndirect; VkBool32 drawIndirectFirstInstance; " +
      "VkBool32 depthClamp; VkBool32 depthBiasClamp; VkBool32 fillModeNonSolid; VkBool32 depthBounds; VkBool32 " +
      "wideLines; VkBool32 largePoints; VkBool32 alphaToOne; VkBool32 multiViewport; VkBool32 " +
      "samplerAnisotropy; VkBool32 textureCompressionETC2; VkBool32 textureCompressionASTC_LDR; VkBool32 " +
      "textureCompressionBC; VkBool32 occlusionQueryPrecise; VkBool32 pipelineStatisticsQuery; VkBool32 " +
      "vertexPipelineStoresAndAtomics; VkBool32 fragmentStoresAndAtomics; VkBool32 " +
      "shaderTessellationAndGeometryPointSize; VkBool32 shaderImageGatherExtended; VkBool32 " +
      "shaderStorageImageExtendedFormats; VkBool32 shaderStorageImageMultisample; VkBool32 " +
      "shaderStorageImageReadWithoutFormat; VkBool32 shaderStorageImageWriteWithoutFormat; VkBool32 " +
      "shaderUniformBufferArrayDynamicIndexing; VkBool32 shaderSampledImageArrayDynamicIndexing; VkBool32 " +
      "shaderStorageBufferArrayDynamicIndexing; VkBool32 shaderStorageImageArrayDynamicIndexing; VkBool32 " +
      "shaderClipDistance; VkBool32 shaderCullDistance; VkBool32 shaderFloat64; VkBool32 shaderInt64; VkBool32 " +
      "shaderInt16; VkBool32 shaderResourceResidency; VkBool32 shaderResourceMinLod; VkBool32 sparseBinding; " +
      "VkBool32 sparseResidencyBuffer; VkBool32 sparseResidencyImage2D; VkBool32 sparseResidencyImage3D; " +
      "VkBool32 sparseResidency2Samples; VkBool32 sparseResidency4Samples; VkBool32 sparseResidency8Samples; " +
      "VkBool32 sparseResidency16Samples; VkBool32 sparseResidencyAliased; VkBool32 variableMultisampleRate; " +
      "VkBool32 inheritedQueries;",
  ],
  [
    "VkQueueFamilyProperties",
    "VkQueueFlags queueFlags; uint32_t queueCount; uint32_t timestampValidBits; VkExtent3D " +
      "minImageTransferGranularity;",
  ],
  ["VkMemoryType", "VkMemoryPropertyFlags propertyFlags; uint32_t heapIndex;"],
  ["VkMemoryHeap", "VkDeviceSize size; VkMemoryHeapFlags flags;"],
  [
    "VkPhysicalDeviceMemoryProperties",
    "uint32_t memoryTypeCount; VkMemoryType memoryTypes[VK_MAX_MEMORY_TYPES]; uint32_t memoryHeapCount; " +
      "VkMemoryHeap memoryHeaps[VK_MAX_MEMORY_HEAPS];",
  ],
  [
    "VkDeviceQueueCreateInfo",
    "VkStructureType sType; const void* pNext; VkDeviceQueueCreateFlags flags; uint32_t queueFamilyIndex; " +
      "uint32_t queueCount; const float* pQueuePriorities;",
  ],
  [
    "VkDeviceCreateInfo",
    "VkStructureType sType; const void* pNext; VkDeviceCreateFlags flags; uint32_t queueCreateInfoCount; " +
      "const VkDeviceQueueCreateInfo* pQueueCreateInfos; uint32_t enabledLayerCount; const char* const* " +
      "ppEnabledLayerNames; uint32_t enabledExtensionCount; const char* const* ppEnabledExtensionNames; const " +
      "VkPhysicalDeviceFeatures* pEnabledFeatures;",
  ],
  [
    "VkBufferCreateInfo",
    "VkStructureType sType; const void* pNext; VkBufferCreateFlags flags; VkDeviceSize size; " +
      "VkBufferUsageFlags usage; VkSharingMode sharingMode; uint32_t queueFamilyIndexCount; const uint32_t* " +
      "pQueueFamilyIndices;",
  ],
  ["VkMemoryRequirements", "VkDeviceSize size; VkDeviceSize alignment; uint32_t memoryTypeBits;"],
  [
    "VkMemoryAllocateInfo",
    "VkStructureType sType; const void* pNext; VkDeviceSize allocationSize; uint32_t memoryTypeIndex;",
  ],
  [
    "VkDescriptorSetLayoutBinding",
    "uint32_t binding; VkDescriptorType descriptorType; uint32_t descriptorCount; VkShaderStageFlags " +
      "stageFlags; const VkSampler* pImmutableSamplers;",
  ],
  [
    "VkDescriptorSetLayoutCreateInfo",
    "VkStructureType sType; const void* pNext; VkDescriptorSetLayoutCreateFlags flags; uint32_t bindingCount; " +
      "const VkDescriptorSetLayoutBinding* pBindings;",
  ],
  ["VkDescriptorPoolSize", "VkDescriptorType type; uint32_t descriptorCount;"],
  [
    "VkDescriptorPoolCreateInfo",
    "VkStructureType sType; const void* pNext; VkDescriptorPoolCreateFlags flags; uint32_t maxSets; uint32_t " +
      "poolSizeCount; const VkDescriptorPoolSize* pPoolSizes;",
  ],
  [
    "VkDescriptorSetAllocateInfo",
    "VkStructureType sType; const void* pNext; VkDescriptorPool descriptorPool; uint32_t descriptorSetCount; " +
      "const VkDescriptorSetLayout* pSetLayouts;",
  ],
  ["VkDescriptorBufferInfo", "VkBuffer buffer; VkDeviceSize offset; VkDeviceSize range;"],
  [
    "VkWriteDescriptorSet",
    "VkStructureType sType; const void* pNext; VkDescriptorSet dstSet; uint32_t dstBinding; uint32_t " +
      "dstArrayElement; uint32_t descriptorCount; VkDescriptorType descriptorType; const VkDescriptorImageInfo* " +
      "pImageInfo; const VkDescriptorBufferInfo* pBufferInfo; const VkBufferView* pTexelBufferView;",
  ],
  ["VkPushConstantRange", "VkShaderStageFlags stageFlags; uint32_t offset; uint32_t size;"],
  [
    "VkPipelineLayoutCreateInfo",
    "VkStructureType sType; const void* pNext; VkPipelineLayoutCreateFlags flags; uint32_t setLayoutCount; " +
      "const VkDescriptorSetLayout* pSetLayouts; uint32_t pushConstantRangeCount; const VkPushConstantRange* " +
      "pPushConstantRanges;",
  ],
  [
    "VkShaderModuleCreateInfo",
    "VkStructureType sType; const void* pNext; VkShaderModuleCreateFlags flags; size_t codeSize; const " +
      "uint32_t* pCode;",
  ],
  [
    "VkPipelineCacheCreateInfo",
    "VkStructureType sType; const void* pNext; VkPipelineCacheCreateFlags flags; size_t initialDataSize; const " +
      "void* pInitialData;",
  ],
  ["VkSpecializationMapEntry", "uint32_t constantID; uint32_t offset; size_t size;"],
  [
    "VkSpecializationInfo",
    "uint32_t mapEntryCount; const VkSpecializationMapEntry* pMapEntries; size_t dataSize; const void* pData;",
  ],
  [
    "VkPipelineShaderStageCreateInfo",
    "VkStructureType sType; const void* pNext; VkPipelineShaderStageCreateFlags flags; VkShaderStageFlagBits " +
      "stage; VkShaderModule module; const char* pName; const VkSpecializationInfo* pSpecializationInfo;",
  ],
  [
    "VkComputePipelineCreateInfo",
    "VkStructureType sType; const void* pNext; VkPipelineCreateFlags flags; VkPipelineShaderStageCreateInfo " +
      "stage; VkPipelineLayout layout; VkPipeline basePipelineHandle; int32_t basePipelineIndex;",
  ],
  [
    "VkCommandPoolCreateInfo",
    "VkStructureType sType; const void* pNext; VkCommandPoolCreateFlags flags; uint32_t queueFamilyIndex;",
  ],
  [
    "VkCommandBufferAllocateInfo",
    "VkStructureType sType; const void* pNext; VkCommandPool commandPool; VkCommandBufferLevel level; " +
      "uint32_t commandBufferCount;",
  ],
  [
    "VkCommandBufferBeginInfo",
    "VkStructureType sType; const void* pNext; VkCommandBufferUsageFlags flags; const " +
      "VkCommandBufferInheritanceInfo* pInheritanceInfo;",
  ],
  [
    "VkMemoryBarrier",
    "VkStructureType sType; const void* pNext; VkAccessFlags srcAccessMask; VkAccessFlags dstAccessMask;",
  ],
  ["VkBufferCopy", "VkDeviceSize srcOffset; VkDeviceSize dstOffset; VkDeviceSize size;"],
  [
    "VkSubmitInfo",
    "VkStructureType sType; const void* pNext; uint32_t waitSemaphoreCount; const VkSemaphore* " +
      "pWaitSemaphores; const VkPipelineStageFlags* pWaitDstStageMask; uint32_t commandBufferCount; const " +
      "VkCommandBuffer* pCommandBuffers; uint32_t signalSemaphoreCount; const VkSemaphore* pSignalSemaphores;",
  ],
  ["VkFenceCreateInfo", "VkStructureType sType; const void* pNext; VkFenceCreateFlags flags;"],
  [
    "VkQueryPoolCreateInfo",
    "VkStructureType sType; const void* pNext; VkQueryPoolCreateFlags flags; VkQueryType queryType; uint32_t " +
      "queryCount; VkQueryPipelineStatisticFlags pipelineStatistics;",
  ],
  ["VkPhysicalDeviceFeatures2", "VkStructureType sType; void* pNext; VkPhysicalDeviceFeatures features;"],
  [
    "VkPhysicalDeviceVulkan11Features",
    "VkStructureType sType; void* pNext; VkBool32 storageBuffer16BitAccess; VkBool32 " +
      "uniformAndStorageBuffer16BitAccess; VkBool32 storagePushConstant16; VkBool32 storageInputOutput16; " +
      "VkBool32 multiview; VkBool32 multiviewGeometryShader; VkBool32 multiviewTessellationShader; VkBool32 " +
      "variablePointersStorageBuffer; VkBool32 variablePointers; VkBool32 protectedMemory; VkBool32 " +
      "samplerYcbcrConversion; VkBool32 shaderDrawParameters;",
  ],
  [
    "VkPhysicalDeviceVulkan12Features",
    "VkStructureType sType; void* pNext; VkBool32 samplerMirrorClampToEdge; VkBool32 drawIndirectCount; " +
      "VkBool32 storageBuffer8BitAccess; VkBool32 uniformAndStorageBuffer8BitAccess; VkBool32 " +
      "storagePushConstant8; VkBool32 shaderBufferInt64Atomics; VkBool32 shaderSharedInt64Atomics; VkBool32 " +
      "shaderFloat16; VkBool32 shaderInt8; VkBool32 descriptorIndexing; VkBool32 " +
      "shaderInputAttachmentArrayDynamicIndexing; VkBool32 shaderUniformTexelBufferArrayDynamicIndexing; " +
      "VkBool32 shaderStorageTexelBufferArrayDynamicIndexing; VkBool32 " +
      "shaderUniformBufferArrayNonUniformIndexing; VkBool32 shaderSampledImageArrayNonUniformIndexing; VkBool32 " +
      "shaderStorageBufferArrayNonUniformIndexing; VkBool32 shaderStorageImageArrayNonUniformIndexing; VkBool32 " +
      "shaderInputAttachmentArrayNonUniformIndexing; VkBool32 shaderUniformTexelBufferArrayNonUniformIndexing; " +
      "VkBool32 shaderStorageTexelBufferArrayNonUniformIndexing; VkBool32 " +
      "descriptorBindingUniformBufferUpdateAfterBind; VkBool32 descriptorBindingSampledImageUpdateAfterBind; " +
      "VkBool32 descriptorBindingStorageImageUpdateAfterBind; VkBool32 " +
      "descriptorBindingStorageBufferUpdateAfterBind; VkBool32 " +
      "descriptorBindingUniformTexelBufferUpdateAfterBind; VkBool32 " +
      "descriptorBindingStorageTexelBufferUpdateAfterBind; VkBool32 descriptorBindingUpdateUnusedWhilePending; " +
      "VkBool32 descriptorBindingPartiallyBound; VkBool32 descriptorBindingVariableDescriptorCount; VkBool32 " +
      "runtimeDescriptorArray; VkBool32 samplerFilterMinmax; VkBool32 scalarBlockLayout; VkBool32 " +
      "imagelessFramebuffer; VkBool32 uniformBufferStandardLayout; VkBool32 shaderSubgroupExtendedTypes; " +
      "VkBool32 separateDepthStencilLayouts; VkBool32 hostQueryReset; VkBool32 timelineSemaphore; VkBool32 " +
      "bufferDeviceAddress; VkBool32 bufferDeviceAddressCaptureReplay; VkBool32 bufferDeviceAddressMultiDevice; " +
      "VkBool32 vulkanMemoryModel; VkBool32 vulkanMemoryModelDeviceScope; VkBool32 " +
      "vulkanMemoryModelAvailabilityVisibilityChains; VkBool32 shaderOutputViewportIndex; VkBool32 " +
      "shaderOutputLayer; VkBool32 subgroupBroadcastDynamicId;",
  ],
  ["VkPhysicalDeviceProperties2", "VkStructureType sType; void* pNext; VkPhysicalDeviceProperties properties;"],
  [
    "VkPhysicalDeviceSubgroupProperties",
    "VkStructureType sType; void* pNext; uint32_t subgroupSize; VkShaderStageFlags supportedStages; " +
      "VkSubgroupFeatureFlags supportedOperations; VkBool32 quadOperationsInAllStages;",
  ],
  ["VkDebugUtilsLabelEXT", "VkStructureType sType; const void* pNext; const char* pLabelName; float color[4];"],
  [
    "VkDebugUtilsObjectNameInfoEXT",
    "VkStructureType sType; const void* pNext; VkObjectType objectType; uint64_t objectHandle; const char* " +
      "pObjectName;",
  ],
  [
    "VkDebugUtilsMessengerCallbackDataEXT",
    "VkStructureType sType; const void* pNext; VkDebugUtilsMessengerCallbackDataFlagsEXT flags; const char* " +
      "pMessageIdName; int32_t messageIdNumber; const char* pMessage; uint32_t queueLabelCount; const " +
      "VkDebugUtilsLabelEXT* pQueueLabels; uint32_t cmdBufLabelCount; const VkDebugUtilsLabelEXT* " +
      "pCmdBufLabels; uint32_t objectCount; const VkDebugUtilsObjectNameInfoEXT* pObjects;",
  ],
  [
    "VkDebugUtilsMessengerCreateInfoEXT",
    "VkStructureType sType; const void* pNext; VkDebugUtilsMessengerCreateFlagsEXT flags; " +
      "VkDebugUtilsMessageSeverityFlagsEXT messageSeverity; VkDebugUtilsMessageTypeFlagsEXT messageType; " +
      "PFN_vkDebugUtilsMessengerCallbackEXT pfnUserCallback; void* pUserData;",
  ],
];

// Typed errors of @poot/backend-vulkan: failed Vulkan calls (with the VkResult and the call), missing
// loader or device, validation-layer reports and bad use of buffers and kernels. Internal bugs use invariant().

/** Stable codes of {@link VulkanError}. */
export type VulkanErrorCode =
  /** libvulkan.so.1 could not be loaded. */
  | "loader-missing"
  /** A Vulkan call returned an error VkResult (`context.result`, `context.call`) other than the two below. */
  | "vk-result"
  /** VK_ERROR_DEVICE_LOST: the device is gone (driver reset, hang); every later call fails. */
  | "device-lost"
  /** VK_ERROR_OUT_OF_DEVICE_MEMORY or VK_ERROR_OUT_OF_HOST_MEMORY (`context.result` says which). */
  | "out-of-memory"
  /** No physical device offers what was asked (a compute queue, the required features). */
  | "no-device"
  /** No memory type has the properties a buffer needs. */
  | "no-memory-type"
  /** The validation layer reported an error (`context.message`). */
  | "validation"
  /** A requested layer or extension is not available. */
  | "missing-layer"
  /** A kernel launch whose buffers, uniforms or grid do not fit its TargetCode or the device limits. */
  | "bad-launch"
  /** A host read or write outside a buffer. */
  | "out-of-range"
  /** Use of a disposed device, buffer or recording. */
  | "disposed";

/** What a {@link VulkanError} concerns. */
export interface VulkanErrorContext {
  /** The Vulkan call, e.g. `vkCreateComputePipelines`. */
  readonly call?: string;
  /** The VkResult name, e.g. `VK_ERROR_OUT_OF_DEVICE_MEMORY`. */
  readonly result?: string;
  /** The raw VkResult value. */
  readonly code?: number;
  /** Kernel, buffer or layer name. */
  readonly name?: string;
  /** A byte offset or size involved. */
  readonly bytes?: number;
  /** A validation-layer message. */
  readonly message?: string;
}

/** The one error class of @poot/backend-vulkan; switch on `code`. */
export class VulkanError extends Error {
  override readonly name = "VulkanError";
  /**
   * @param code - stable error code.
   * @param message - what went wrong, for the user.
   * @param context - the call, result, kernel or buffer it concerns.
   */
  constructor(
    readonly code: VulkanErrorCode,
    message: string,
    readonly context: VulkanErrorContext = {},
  ) {
    super(`[${code}]${context.call !== undefined ? ` ${context.call}:` : ""} ${message}`);
  }
}

/** Throws an internal-bug error when `cond` is false (never for bad caller input). */
export function invariant(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`@poot/backend-vulkan internal error: ${message}`);
}

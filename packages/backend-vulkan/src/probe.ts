// Whether this machine has a usable Vulkan device, answered without throwing, so tests and the CLI can
// skip or fall back with the reason (no loader, no ICD, no compute-capable device).

import { VulkanError } from "./errors.js";
import { VulkanInstance } from "./instance.js";
import { describePhysicalDevice, type PhysicalDeviceInfo } from "./physical.js";

/** The answer of {@link probeVulkan}. */
export type VulkanProbe =
  | { readonly ok: true; readonly devices: readonly PhysicalDeviceInfo[] }
  | { readonly ok: false; readonly reason: string };

/** Lists the Vulkan devices with a compute queue, or says why there are none. */
export function probeVulkan(options: { readonly loader?: string } = {}): VulkanProbe {
  let inst: VulkanInstance | undefined;
  try {
    // The shared instance: a probe is no extra create/destroy cycle of the driver (decision 1650).
    inst = VulkanInstance.shared(options.loader === undefined ? {} : { loader: options.loader });
    const devices = inst
      .physicalDevices()
      .map((h, i) => describePhysicalDevice(inst!.vk, h, i))
      .filter((d) => d.computeQueueFamily >= 0);
    if (devices.length === 0)
      return {
        ok: false,
        reason: "the Vulkan loader found no device with a compute queue (no ICD installed? set VK_DRIVER_FILES)",
      };
    return { ok: true, devices };
  } catch (e) {
    if (e instanceof VulkanError) return { ok: false, reason: e.message };
    throw e;
  } finally {
    inst?.release();
  }
}

// Unit tests of the bindings: struct layouts match the C ABI sizes of the header, and a failed call
// becomes a VulkanError naming the call and the VkResult.

import { describe, expect, test } from "vitest";
import koffi from "koffi";
import { VulkanError } from "../errors.js";
import { check, createHandle, loadVulkan, resultName } from "./api.js";
import "../../test/helpers.js";

describe("bindings", () => {
  test("struct sizes equal the C sizes (x86-64, from sizeof in a C compiler)", () => {
    const s = loadVulkan().struct;
    // sizeof() of each struct as gcc 12 reports it against vulkan_core.h 1.3.239.
    const sizes: Record<string, number> = {
      VkPhysicalDeviceLimits: 504,
      VkPhysicalDeviceProperties: 824,
      VkPhysicalDeviceFeatures: 220,
      VkPhysicalDeviceVulkan12Features: 208,
      VkPhysicalDeviceVulkan11Features: 64,
      VkQueueFamilyProperties: 24,
      VkPhysicalDeviceMemoryProperties: 520,
      VkWriteDescriptorSet: 64,
      VkComputePipelineCreateInfo: 96,
      VkSubmitInfo: 72,
      VkDebugUtilsMessengerCallbackDataEXT: 96,
    };
    for (const [name, size] of Object.entries(sizes)) expect(koffi.sizeof(s[name]!), name).toBe(size);
  });

  test("check() passes success codes through and throws a typed error naming the call and the VkResult", () => {
    expect(check(0, "vkX")).toBe(0);
    expect(check(5, "vkX")).toBe(5);
    const thrown = (result: number, call: string): VulkanError => {
      try {
        check(result, call, "weights");
      } catch (e) {
        expect(e).toBeInstanceOf(VulkanError);
        return e as VulkanError;
      }
      throw new Error(`check(${result}) did not throw`);
    };
    const oom = thrown(-2, "vkAllocateMemory");
    expect(oom.code).toBe("out-of-memory");
    expect(oom.context).toEqual({ call: "vkAllocateMemory", result: "VK_ERROR_OUT_OF_DEVICE_MEMORY", code: -2 });
    expect(thrown(-1, "vkAllocateMemory").code).toBe("out-of-memory");
    const lost = thrown(-4, "vkQueueSubmit");
    expect(lost.code).toBe("device-lost");
    expect(lost.context.result).toBe("VK_ERROR_DEVICE_LOST");
    expect(thrown(-3, "vkCreateInstance").code).toBe("vk-result");
    expect(resultName(-1000069000)).toBe("VK_ERROR_OUT_OF_POOL_MEMORY");
  });

  test("a real failing call: an instance with a layer that does not exist is VK_ERROR_LAYER_NOT_PRESENT", (ctx) => {
    let vk: ReturnType<typeof loadVulkan>;
    try {
      vk = loadVulkan();
    } catch (e) {
      return ctx.skip(`no Vulkan loader: ${(e as Error).message}`);
    }
    let err: unknown;
    try {
      const h = createHandle(
        vk.fn.vkCreateInstance!,
        "vkCreateInstance",
        {
          sType: 1,
          pNext: null,
          flags: 0,
          pApplicationInfo: null,
          enabledLayerCount: 1,
          ppEnabledLayerNames: ["VK_LAYER_poot_does_not_exist"],
          enabledExtensionCount: 0,
          ppEnabledExtensionNames: null,
        },
        null,
      );
      vk.fn.vkDestroyInstance!(h, null);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(VulkanError);
    expect((err as VulkanError).context.call).toBe("vkCreateInstance");
    expect((err as VulkanError).context.result).toBe("VK_ERROR_LAYER_NOT_PRESENT");
  });
});

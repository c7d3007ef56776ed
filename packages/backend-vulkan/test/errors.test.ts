// Typed errors: a planted validation-layer error reaches the messenger and fails the next checked call;
// bad launches, out-of-range host copies, failed VkResults and use after dispose are VulkanErrors.

import { describe, expect, test } from "vitest";
import { lowerSpirv, lowerWgsl } from "@poot/codegen";
import {
  chooseDevice,
  instanceLayers,
  Recording,
  VALIDATION_LAYER,
  VulkanError,
  VulkanKernel,
  type PhysicalDeviceInfo,
} from "@poot/backend-vulkan";
import { noVulkan, openDevice } from "./helpers.js";
import { colSum } from "./kernels.js";

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof VulkanError) return e.code;
    throw e;
  }
  return undefined;
}

describe.skipIf(noVulkan !== undefined)(
  `typed errors${noVulkan === undefined ? "" : ` (skipped: ${noVulkan})`}`,
  () => {
    test("a planted validation error (a zero-sized VkBuffer) is caught by the messenger and thrown as 'validation'", (ctx) => {
      if (!instanceLayers().includes(VALIDATION_LAYER)) return ctx.skip(`${VALIDATION_LAYER} is not installed`);
      const device = openDevice({ validation: true });
      try {
        expect(device.instance.validation).toBe(true);
        const out = new BigUint64Array(1);
        // size 0 violates VUID-VkBufferCreateInfo-size-00912; the driver may still create it.
        device.vk.fn.vkCreateBuffer!(
          device.handle,
          {
            sType: 12,
            pNext: null,
            flags: 0,
            size: 0,
            usage: 0x20,
            sharingMode: 0,
            queueFamilyIndexCount: 0,
            pQueueFamilyIndices: null,
          },
          null,
          out,
        );
        expect(device.instance.errors().map((m) => m.id)).toContain("VUID-VkBufferCreateInfo-size-00912");
        if (out[0] !== 0n) device.vk.fn.vkDestroyBuffer!(device.handle, out[0], null);
        expect(code(() => device.instance.throwOnValidationErrors("vkCreateBuffer"))).toBe("validation");
        expect(device.instance.errors()).toEqual([]);
      } finally {
        device.dispose();
      }
    });

    test("a buffer far beyond the device's memory is 'out-of-memory' naming the VkResult; the device stays usable", () => {
      const device = openDevice();
      try {
        const bytes = 2 ** 40;
        expect(bytes).toBeGreaterThan(device.info.deviceLocalBytes);
        let err: unknown;
        try {
          device.createBuffer(bytes, "device", "huge");
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(VulkanError);
        expect((err as VulkanError).code).toBe("out-of-memory");
        expect((err as VulkanError).context.result).toMatch(/^VK_ERROR_OUT_OF_(DEVICE|HOST)_MEMORY$/);
        device.createBuffer(64, "device", "after").dispose();
      } finally {
        device.dispose();
      }
    });

    test("bad launches, host copies out of range, and use after dispose", () => {
      const device = openDevice();
      const buf = device.createBuffer(64, "device", "small");
      expect(code(() => device.upload(buf, new Float32Array(17)))).toBe("out-of-range");
      expect(code(() => device.download(buf, 60, 8))).toBe("out-of-range");
      expect(code(() => buf.mapped())).toBe("out-of-range");
      const k = VulkanKernel.create(device, colSum, lowerSpirv(colSum, device.caps));
      expect(code(() => k.bind({ cache: buf }, { width: 4, rows: 4 }))).toBe("bad-launch");
      expect(code(() => k.bind({ cache: buf, out: buf }, { width: 4 }))).toBe("bad-launch");
      expect(
        code(() => VulkanKernel.create(device, colSum, lowerWgsl(colSum, { ...device.caps, maxStorageBuffers: 8 }))),
      ).toBe("bad-launch");
      expect(
        code(() => device.pipelines.pipeline(new Uint8Array(24), "main", device.pipelines.layout(["storage"]))),
      ).toBe("bad-launch");
      const bound = k.bind({ cache: buf, out: buf }, { width: 4, rows: 4 });
      const max = device.info.limits.maxWorkgroupCount[0];
      expect(code(() => Recording.record(device, [{ kind: "dispatch", kernel: bound, grid: [max + 1, 1, 1] }]))).toBe(
        "bad-launch",
      );
      expect(code(() => Recording.record(device, [{ kind: "dispatch", kernel: bound, grid: [0, 1, 1] }]))).toBe(
        "bad-launch",
      );
      device.dispose();
      expect(code(() => device.createBuffer(4, "host"))).toBe("disposed");
    });
  },
);

describe("device choice", () => {
  const base: PhysicalDeviceInfo = {
    index: 0,
    handle: 1n,
    name: "cpu",
    type: "cpu",
    apiVersion: "1.3.0",
    cacheId: "vulkan-test",
    computeQueueFamily: 0,
    timestampValidBits: 64,
    timestampPeriod: 1,
    subgroup: { size: 8, basic: true, arithmetic: true, shuffle: true },
    storage16: true,
    shaderFloat16: true,
    shaderInt16: true,
    limits: {
      maxWorkgroupInvocations: 1024,
      maxWorkgroupSize: [1024, 1024, 64],
      maxWorkgroupCount: [65535, 65535, 65535],
      sharedBytes: 32768,
      maxStorageBufferRange: 2 ** 31,
      maxPerStageStorageBuffers: 16,
      maxPushConstantsBytes: 128,
      minStorageBufferOffsetAlignment: 16,
      minUniformBufferOffsetAlignment: 16,
    },
    deviceLocalBytes: 1e9,
  };
  test("prefers a discrete GPU, then more device memory; refuses devices lacking a requirement, naming it", () => {
    const gpu = { ...base, index: 1, name: "gpu", type: "discrete" as const, storage16: false };
    const big = { ...base, index: 2, name: "igpu-big", type: "integrated" as const, deviceLocalBytes: 8e9 };
    const small = { ...base, index: 3, name: "igpu-small", type: "integrated" as const };
    expect(chooseDevice([base, small, big, gpu]).name).toBe("gpu");
    expect(chooseDevice([base, small, big, gpu], { storage16: true }).name).toBe("igpu-big");
    let err: unknown;
    try {
      chooseDevice([gpu, { ...base, computeQueueFamily: -1 }], { storage16: true });
    } catch (e) {
      err = e;
    }
    expect((err as VulkanError).code).toBe("no-device");
    expect((err as VulkanError).message).toContain("gpu: no 16-bit storage buffers");
    expect((err as VulkanError).message).toContain("cpu: no compute queue");
  });
});

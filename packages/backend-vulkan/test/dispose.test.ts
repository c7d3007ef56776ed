// Dispose ends every Vulkan object a device made (issue #16: NVIDIA's driver failed the 30th vkCreateInstance of one
// process, decision 1650), counted through the driver layer by trackVulkanObjects: the normal path, the paths that
// fail half-way (a device whose pipeline cache cannot be read, a recording with a bad grid, a recording left alive
// at device dispose), and the process's one shared instance. A destroy planted out is caught by the same count.

import { afterEach, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { lowerSpirv } from "@poot/codegen";
import { loadVulkan, Recording, VulkanDevice, VulkanKernel } from "@poot/backend-vulkan";
import { trackVulkanObjects, type VulkanObjectLedger } from "@poot/testkit";
import { noVulkan, openDevice } from "./helpers.js";
import { colSum } from "./kernels.js";

/** A device with a pipeline, buffers, a bound kernel and a timestamped recording, submitted once. */
function useDevice(device: VulkanDevice, dispose: { recording: boolean }): void {
  const rows = 4,
    width = 8;
  const cache = device.createBuffer(4 * rows * width, "device", "cache");
  const out = device.createBuffer(4 * width, "host", "out");
  device.upload(cache, new Float32Array(rows * width).fill(1));
  const sum = VulkanKernel.create(device, colSum, lowerSpirv(colSum, device.caps));
  const launch = sum.bind({ cache, out }, { width, rows });
  const rec = Recording.record(device, [{ kind: "dispatch", kernel: launch, grid: [1, 1, 1] }], { timestamps: true });
  rec.submit();
  expect(Array.from(new Float32Array(out.mapped().slice().buffer))).toEqual(new Array(width).fill(rows));
  if (dispose.recording) rec.dispose();
  launch.dispose();
}

describe.skipIf(noVulkan !== undefined)(
  `Vulkan dispose ends every object${noVulkan === undefined ? "" : ` (skipped: ${noVulkan})`}`,
  () => {
    let ledger: VulkanObjectLedger;
    // The shared instance of openDevice's options (validation when installed) is made once, before any ledger.
    beforeAll(() => openDevice().dispose());
    beforeEach(() => {
      ledger = trackVulkanObjects(loadVulkan());
    });
    afterEach(() => ledger.stop());

    test("devices opened and disposed leave no object, and share one instance (none created per device)", () => {
      for (let i = 0; i < 3; i++) {
        const device = openDevice();
        useDevice(device, { recording: true });
        device.dispose();
        expect(ledger.live()).toEqual({});
      }
      // The shared instance was made before the ledger started; no device made another.
      expect(ledger.created().Instance ?? 0).toBe(0);
      expect(ledger.created().Device).toBe(3);
      expect(ledger.created().QueryPool).toBe(3);
    });

    test("a recording still alive at device dispose is ended with the device (its query pool too)", () => {
      const device = openDevice();
      useDevice(device, { recording: false });
      device.dispose();
      expect(ledger.live()).toEqual({});
    });

    test("a recording that fails to record (a bad grid) frees its command buffer and query pool", () => {
      const device = openDevice();
      try {
        const out = device.createBuffer(4 * 8, "host", "out");
        const cache = device.createBuffer(4 * 32, "device", "cache");
        const sum = VulkanKernel.create(device, colSum, lowerSpirv(colSum, device.caps));
        const launch = sum.bind({ cache, out }, { width: 8, rows: 4 });
        expect(() =>
          Recording.record(device, [{ kind: "dispatch", kernel: launch, grid: [0, 1, 1] }], { timestamps: true }),
        ).toThrow(/axis 0 must be/);
        expect(ledger.live().CommandBuffer ?? 0).toBe(1); // the device's own transfer command buffer
        expect(ledger.live().QueryPool).toBeUndefined();
      } finally {
        device.dispose();
      }
      expect(ledger.live()).toEqual({});
    });

    test("a device whose constructor fails after vkCreateDevice (an unreadable pipeline cache) ends it", () => {
      const store = {
        readBlob: (): Uint8Array | null => {
          throw new Error("planted: the cache cannot be read");
        },
        writeBlob: (): void => {},
      };
      expect(() => openDevice({ codeCache: store })).toThrow(/planted/);
      expect(ledger.created().Device).toBe(1);
      expect(ledger.live()).toEqual({});
    });

    test("retainInstance: false destroys the instance with its last device (one instance per device)", () => {
      for (let i = 0; i < 2; i++) {
        // A loader name of its own keys a shared instance of its own (the probe's is not touched).
        const device = VulkanDevice.open({ loader: "libvulkan.so.1", retainInstance: false });
        device.dispose();
      }
      expect(ledger.created().Instance).toBe(2);
      expect(ledger.live()).toEqual({});
    });

    test("planted: a device whose dispose skips vkDestroyFence shows the fence alive", () => {
      const vk = loadVulkan();
      const fn = vk.fn as Record<string, (...a: unknown[]) => unknown>;
      const destroyFence = fn.vkDestroyFence!;
      fn.vkDestroyFence = () => undefined;
      let fence: unknown;
      try {
        const device = openDevice();
        fence = (device as unknown as { fence: bigint }).fence;
        device.dispose();
      } finally {
        fn.vkDestroyFence = destroyFence;
      }
      expect(ledger.live()).toEqual({ Fence: 1 });
      expect(typeof fence).toBe("bigint");
    });
  },
);

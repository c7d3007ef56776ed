// The pipeline cache kept across processes (issue #16's warm start): the data the driver hands back is stored in the
// lowering cache's folder under the device's cacheId, read back at the next device open, and a stored file with one
// byte flipped is reported once, deleted and rebuilt, never handed to the driver.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, test } from "vitest";
import { lowerSpirv } from "@poot/codegen";
import { LoweringCache } from "@poot/executor/lowering";
import { VulkanKernel, type VulkanDevice } from "@poot/backend-vulkan";
import { noVulkan, openDevice } from "./helpers.js";
import { colSum } from "./kernels.js";

/** Opens a device over `store`, builds one pipeline, saves the cache data and closes the device. */
function buildOnce(store: LoweringCache): VulkanDevice["info"] {
  const device = openDevice({ codeCache: store });
  try {
    VulkanKernel.create(device, colSum, lowerSpirv(colSum, device.caps));
    device.pipelines.save();
    return device.info;
  } finally {
    device.dispose();
  }
}

describe.skipIf(noVulkan !== undefined)(
  `Vulkan pipeline cache on disk${noVulkan === undefined ? "" : ` (skipped: ${noVulkan})`}`,
  () => {
    const dir = (): string => fs.mkdtempSync(path.join(os.tmpdir(), "poot-vkcache-"));

    test("the stored data is the driver's: the header the Vulkan spec defines, for this device and its UUID", () => {
      const store = new LoweringCache({ dir: dir(), warn: (m) => expect.fail(`no warning expected: ${m}`) });
      const info = buildOnce(store);
      const data = store.readBlob(info.cacheId);
      expect(data).not.toBeNull();
      // VkPipelineCacheHeaderVersionOne: headerSize, headerVersion (1 = ONE), vendorID, deviceID, pipelineCacheUUID.
      const v = new DataView(data!.buffer, data!.byteOffset, data!.byteLength);
      expect(v.getUint32(0, true)).toBeGreaterThanOrEqual(32);
      expect(v.getUint32(4, true)).toBe(1);
      const [, uuid, vendor, dev] = /^vulkan-([0-9a-f]{32})-([0-9a-f]+)-([0-9a-f]+)-[0-9a-f]+$/.exec(info.cacheId)!;
      expect(v.getUint32(8, true)).toBe(Number.parseInt(vendor!, 16));
      expect(v.getUint32(12, true)).toBe(Number.parseInt(dev!, 16));
      expect(Buffer.from(data!.subarray(16, 32)).toString("hex")).toBe(uuid);
      // A second process reads it without a warning and builds the same pipeline through it.
      buildOnce(store);
    });

    test("a stored file with one byte flipped is reported once, deleted and rebuilt, never used", () => {
      const warnings: string[] = [];
      const store = new LoweringCache({ dir: dir(), warn: (m) => warnings.push(m) });
      const info = buildOnce(store);
      const file = store.blobFile(info.cacheId);
      const bytes = fs.readFileSync(file);
      bytes.writeUInt8(bytes.readUInt8(bytes.length - 1) ^ 0x01, bytes.length - 1);
      fs.writeFileSync(file, bytes);
      const device = openDevice({ codeCache: store });
      try {
        expect(warnings).toHaveLength(1);
        expect(warnings[0]).toContain("corrupted");
        expect(fs.existsSync(file)).toBe(false);
        VulkanKernel.create(device, colSum, lowerSpirv(colSum, device.caps));
        device.pipelines.save();
      } finally {
        device.dispose();
      }
      // Rebuilt and sound: the next open reads it without another warning.
      buildOnce(store);
      expect(warnings).toHaveLength(1);
      expect(store.readBlob(info.cacheId)).not.toBeNull();
    });
  },
);

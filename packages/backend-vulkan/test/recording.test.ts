// A decode-like step recorded ONCE into a command buffer and resubmitted per token: only the bytes of a
// host-visible slot buffer change between submissions; State stays device-side across steps.

import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { lowerSpirv } from "@poot/codegen";
import { Recording, VulkanKernel, type VulkanDevice } from "@poot/backend-vulkan";
import { noVulkan, openDevice, rng, uniformF32 } from "./helpers.js";
import { cacheWrite, colSum } from "./kernels.js";

describe.skipIf(noVulkan !== undefined)(
  `recorded steps${noVulkan === undefined ? "" : ` (skipped: ${noVulkan})`}`,
  () => {
    let device: VulkanDevice;
    beforeAll(() => {
      device = openDevice({ timestamps: true });
    });
    afterAll(() => device?.dispose());

    test("one recording, resubmitted per position, equals a float64 simulation at every step", () => {
      const rows = 8,
        width = 4,
        scale = 1.5;
      const align = Math.max(4, device.info.limits.minStorageBufferOffsetAlignment);
      // One slot block: pos (i32) at 0, x (f32[width]) at the next aligned offset, as a planner lays slots out.
      const slots = device.createBuffer(align + 4 * width, "host", "slots");
      const cache = device.createBuffer(4 * rows * width, "device", "cache");
      const out = device.createBuffer(4 * width, "host", "out");
      device.zero(cache);
      const write = VulkanKernel.create(device, cacheWrite, lowerSpirv(cacheWrite, device.caps));
      const sum = VulkanKernel.create(device, colSum, lowerSpirv(colSum, device.caps));
      const pipelinesBefore = device.pipelines.size;
      const rec = Recording.record(
        device,
        [
          {
            kind: "dispatch",
            kernel: write.bind(
              {
                pos: { buffer: slots, offset: 0, bytes: 4 },
                x: { buffer: slots, offset: align, bytes: 4 * width },
                cache,
              },
              { width, scale },
            ),
            grid: [1, 1, 1],
          },
          { kind: "dispatch", kernel: sum.bind({ cache, out }, { width, rows }), grid: [1, 1, 1] },
        ],
        { timestamps: true, name: "decode" },
      );

      const sim = new Float64Array(rows * width);
      const r = rng(7);
      const view = new DataView(slots.mapped().buffer, slots.mapped().byteOffset, slots.bytes);
      for (const pos of [0, 1, 2, 5, 1, 7]) {
        const x = uniformF32(width, r);
        view.setInt32(0, pos, true);
        x.forEach((v, i) => view.setFloat32(align + 4 * i, v, true));
        rec.submit();
        for (let i = 0; i < width; i++) sim[pos * width + i] = Math.fround(x[i]! * scale);
        const want = Array.from({ length: width }, (_, i) => {
          let s = 0;
          for (let q = 0; q < rows; q++) s += sim[q * width + i]!;
          return s;
        });
        const got = new Float32Array(out.mapped().slice().buffer);
        got.forEach((g, i) =>
          expect(Math.abs(g - want[i]!)).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(want[i]!))),
        );
      }
      expect(rec.submissions).toBe(6);
      // Binding and recording created no new pipelines beyond the two kernels'.
      expect(device.pipelines.size).toBe(pipelinesBefore);
      const t = rec.timings();
      if (device.info.timestampValidBits > 0) {
        expect(t?.map((s) => s.label)).toEqual(["vk_cache_write", "vk_col_sum"]);
        t!.forEach((s) => expect(s.ns).toBeGreaterThan(0));
      }
      rec.dispose();
      expect(device.instance.errors()).toEqual([]);
    });

    test("the same SPIR-V makes one pipeline however often it is bound", () => {
      const n0 = device.pipelines.modulesCreated;
      const a = VulkanKernel.create(device, colSum, lowerSpirv(colSum, device.caps));
      const b = VulkanKernel.create(device, colSum, lowerSpirv(colSum, device.caps));
      expect(a.pipeline).toBe(b.pipeline);
      expect(device.pipelines.modulesCreated).toBe(n0);
    });
  },
);

// Issue #16 on the H200: one process creating and disposing the CLI's Vulkan executor per fixture failed its 30th
// vkCreateInstance (VK_ERROR_INCOMPATIBLE_DRIVER). Here, on lavapipe, the same cycle (the executor `--backend vulkan`
// makes, a GGUF fixture loaded, prefilled and decoded, closed and disposed) repeated in one process must end every
// Vulkan object it made and create no instance after the first (decision 1650); counted through the driver layer,
// which catches a destroy planted out (the process's descriptors do not: lavapipe holds none per object).
import * as fs from "node:fs";
import { createVulkanExecutor, loadVulkan, probeVulkan } from "@poot/backend-vulkan";
import type { Executor } from "@poot/executor";
import { Engine } from "@poot/runtime";
import { fixture, needFixture, trackVulkanObjects } from "@poot/testkit";
import { describe, expect, test } from "vitest";
import { createExecutor, loadBackend } from "../src/commands/backends.js";

const GGUF = "gguf/formats/llama3-Q4_0.gguf";
const probe = probeVulkan();
const why = needFixture(GGUF) ?? (probe.ok ? undefined : `no Vulkan device: ${probe.reason}`);
const fds = (): number => fs.readdirSync("/proc/self/fd").length;

/** One fixtures-run case: an executor, the model prefilled (8 tokens) and decoded one token, then all disposed. */
function cycle(executor: Executor): void {
  const engine = Engine.load(fixture(GGUF), { executor, context: 24, prefillChunk: 8, tokenizer: null });
  try {
    const s = engine.openSession();
    const logits = s.step([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(logits.every(Number.isFinite)).toBe(true);
    s.step([3]);
    s.release();
  } finally {
    engine.close();
    executor.dispose();
  }
}

describe.skipIf(why !== undefined)(
  `Vulkan executors created and disposed in one process${why ? ` (skipped: ${why})` : ""}`,
  () => {
    test("5 CLI executors leave no Vulkan object and no descriptor, and create no instance after the first", async () => {
      await loadBackend("vulkan", "test");
      cycle(createExecutor("vulkan", "test")); // warm-up: the shared instance exists from here on
      const ledger = trackVulkanObjects(loadVulkan());
      try {
        const before = fds();
        for (let i = 0; i < 5; i++) {
          cycle(createExecutor("vulkan", "test"));
          expect(ledger.live(), `after executor ${i + 2}`).toEqual({});
        }
        expect(ledger.created().Device).toBe(5);
        expect(ledger.created().Instance ?? 0).toBe(0);
        expect(fds()).toBeLessThanOrEqual(before);
      } finally {
        ledger.stop();
      }
    });

    test("planted: an executor whose device skips vkDestroyPipeline leaves its pipelines alive", () => {
      const ledger = trackVulkanObjects(loadVulkan());
      const fn = loadVulkan().fn as Record<string, (...a: unknown[]) => unknown>;
      const destroy = fn.vkDestroyPipeline!;
      fn.vkDestroyPipeline = () => undefined;
      const before = fds();
      try {
        cycle(createVulkanExecutor());
      } finally {
        fn.vkDestroyPipeline = destroy;
        ledger.stop();
      }
      expect(ledger.live().Pipeline).toBe(ledger.created().Pipeline);
      expect(ledger.created().Pipeline).toBeGreaterThan(0);
      // The descriptor count does not see it on lavapipe (the reason the ledger is the gate).
      expect(fds()).toBeLessThanOrEqual(before);
    });

    test("planted: retainInstance: false (the tree before decision 1650) creates one instance per executor", () => {
      const ledger = trackVulkanObjects(loadVulkan());
      try {
        for (let i = 0; i < 2; i++) cycle(createVulkanExecutor({ loader: "libvulkan.so.1", retainInstance: false }));
      } finally {
        ledger.stop();
      }
      expect(ledger.created().Instance).toBe(2);
      expect(ledger.live()).toEqual({});
    });
  },
);

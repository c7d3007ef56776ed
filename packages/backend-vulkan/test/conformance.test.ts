// The executor conformance suite (written once in @poot/executor) on the Vulkan executor: every case is
// compiled by graph-plan, synthesized by kernelgen, lowered to SPIR-V and run on the device step by step.

import { afterAll } from "vitest";
import { runConformance } from "@poot/executor/conformance";
import { createVulkanExecutor, VulkanDevice } from "@poot/backend-vulkan";
import { noVulkan, openDevice } from "./helpers.js";

// One device for the whole suite (opening one per test is slow on a CPU driver); executors do not own it.
let device: VulkanDevice | undefined;
afterAll(() => device?.dispose());

runConformance("vulkan", () => createVulkanExecutor({ device: (device ??= openDevice()) }), {
  dtypes: ["f32", "f16", "bf16"],
  tolerance: 1e-5,
  ...(noVulkan === undefined ? {} : { skip: noVulkan }),
});

// GPU-machine entry point for issue #16's Vulkan leak (decision 1650): CYCLES create/dispose cycles in this one
// process, one JSON line each: ok (or the error), ms, the process's open descriptors, threads and RSS, and the Vulkan
// objects still alive and created so far, counted through the driver layer (trackVulkanObjects).
//   instance: a bare VkInstance (VulkanInstance.shared, then release);
//   device: VulkanDevice.open, then dispose;
//   executor: createVulkanExecutor, MODEL (a GGUF) loaded, 8 tokens prefilled and one decoded, then all disposed,
//     as one case of the fixtures run that failed the 30th vkCreateInstance on the H200.
// VKLEAK_RETAIN=0 destroys the instance with its last user (the tree before decision 1650: one vkCreateInstance and
// vkDestroyInstance a cycle); 1 (default) keeps the process's shared instance.
// usage: [VKLEAK_RETAIN=0|1] node vk-leak.gpu.mjs instance|device|executor CYCLES [MODEL]
import * as fs from "node:fs";
import { createVulkanExecutor, loadVulkan, VulkanDevice, VulkanInstance } from "@poot/backend-vulkan";
import { Engine } from "@poot/runtime";
import { trackVulkanObjects } from "@poot/testkit";

const [mode, cyclesArg, model] = process.argv.slice(2);
const cycles = Number(cyclesArg);
if (!["instance", "device", "executor"].includes(mode ?? "") || !(cycles > 0) || (mode === "executor" && !model)) {
  console.error("usage: [VKLEAK_RETAIN=0|1] vk-leak.gpu.mjs instance|device|executor CYCLES [MODEL]");
  process.exit(2);
}
const retain = process.env.VKLEAK_RETAIN !== "0";

/** Threads and RSS (MiB) of this process, from /proc/self/status. */
function status(): { threads: number; rssMiB: number } {
  const s = fs.readFileSync("/proc/self/status", "utf8");
  const field = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(s)?.[1] ?? -1);
  return { threads: field("Threads"), rssMiB: Math.round(field("VmRSS") / 1024) };
}

function once(): void {
  if (mode === "instance") {
    VulkanInstance.shared().release(retain);
  } else if (mode === "device") {
    VulkanDevice.open({ retainInstance: retain }).dispose();
  } else {
    const executor = createVulkanExecutor({ retainInstance: retain });
    try {
      const engine = Engine.load(model!, { executor, context: 24, prefillChunk: 8, tokenizer: null });
      try {
        const s = engine.openSession();
        s.step([1, 2, 3, 4, 5, 6, 7, 8]);
        s.step([3]);
        s.release();
      } finally {
        engine.close();
      }
    } finally {
      executor.dispose();
    }
  }
}

const ledger = trackVulkanObjects(loadVulkan());
let ok = 0;
let firstFailure: number | null = null;
const fds = (): number => fs.readdirSync("/proc/self/fd").length;
const fds0 = fds();
for (let cycle = 1; cycle <= cycles; cycle++) {
  const t0 = performance.now();
  let error: string | undefined;
  try {
    once();
    ok++;
  } catch (e) {
    error = String((e as Error).message ?? e).slice(0, 300);
    firstFailure ??= cycle;
  }
  const line = {
    mode,
    retain,
    cycle,
    ok: error === undefined,
    ms: Math.round(performance.now() - t0),
    fds: fds(),
    ...status(),
    live: ledger.live(),
    created: { Instance: ledger.created().Instance ?? 0, Device: ledger.created().Device ?? 0 },
    ...(error === undefined ? {} : { error }),
  };
  console.log(JSON.stringify(line));
}
console.log(
  `VKLEAK ${mode} retain=${retain ? 1 : 0}: ${ok}/${cycles} ok, first failure ${firstFailure ?? "none"}, ` +
    `fds ${fds0} -> ${fds()}, live ${JSON.stringify(ledger.live())}`,
);
process.exit(ok === cycles ? 0 : 1);

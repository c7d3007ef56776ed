// One-off kernel launches from host arrays: upload every buffer to device-local memory, dispatch once,
// read the written buffers back. The harness behind the kernel tests and `poot kernels --run`-style tools.

import { lowerSpirv } from "@poot/codegen";
import type { Kernel, KernelBuffer } from "@poot/kernel-dsl";
import type { VulkanBuffer } from "./buffer.js";
import type { VulkanDevice } from "./device.js";
import { VulkanKernel } from "./kernel.js";
import { Recording, type StepTiming } from "./recording.js";

/** Options of {@link launchKernel}. */
export interface LaunchOptions {
  /** Specialization values passed to codegen. */
  readonly specs?: Readonly<Record<string, number>>;
  /** Collect a timestamp for the dispatch. */
  readonly timestamps?: boolean;
}

/**
 * Lowers `kernel` to SPIR-V for `device`, runs it once over `grid` with `buffers` (host arrays by kernel
 * buffer name) and `uniforms`, and copies every buffer the kernel may write back into its host array.
 * Returns the dispatch time when timestamps were asked for and the queue has them.
 */
export function launchKernel(
  device: VulkanDevice,
  kernel: Kernel,
  grid: readonly [number, number, number],
  buffers: Readonly<Record<string, KernelBuffer>>,
  uniforms: Readonly<Record<string, number>> = {},
  options: LaunchOptions = {},
): StepTiming | null {
  const code = lowerSpirv(kernel, device.caps, options.specs === undefined ? {} : { specs: options.specs });
  const vkKernel = VulkanKernel.create(device, kernel, code);
  const made = new Map<string, VulkanBuffer>();
  let rec: Recording | undefined;
  try {
    for (const b of kernel.buffers) {
      const host = buffers[b.name];
      if (host === undefined) continue;
      const buf = device.createBuffer(host.byteLength, "device", b.name);
      made.set(b.name, buf);
      device.upload(buf, host);
    }
    rec = Recording.record(
      device,
      [{ kind: "dispatch", kernel: vkKernel.bind(Object.fromEntries(made), uniforms), grid }],
      { timestamps: options.timestamps ?? false, name: kernel.name },
    );
    rec.submit();
    for (const b of kernel.buffers) {
      const host = buffers[b.name];
      if (host === undefined || (b.access === "read" && b.atomic !== true)) continue;
      new Uint8Array(host.buffer, host.byteOffset, host.byteLength).set(
        device.download(made.get(b.name)!, 0, host.byteLength),
      );
    }
    return rec.timings()?.[0] ?? null;
  } finally {
    rec?.dispose();
    for (const b of made.values()) b.dispose();
  }
}

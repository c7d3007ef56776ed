// Test helpers: point the Vulkan loader at lavapipe when no ICD is chosen yet, open a device with the
// validation layer when it is installed, and say why when there is no Vulkan device at all.

import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { probeVulkan, VulkanDevice, type DeviceOptions } from "@poot/backend-vulkan";
export { rng } from "@poot/testkit";

/** lavapipe's ICD manifest as written by .ci/lavapipe-setup (or an older setup's folder), when present. */
export function lavapipeIcd(): string | undefined {
  const cache = process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache");
  return [
    join(cache, "poot", "lavapipe", "lavapipe_icd.json"),
    join(homedir(), ".cache", "lavapipe25", "lvp_icd.json"),
  ].find((p) => existsSync(p));
}

// Tests (not the library) choose the ICD: the loader reads VK_DRIVER_FILES at instance creation.
if (process.env.VK_DRIVER_FILES === undefined && process.env.VK_ICD_FILENAMES === undefined) {
  const icd = lavapipeIcd();
  if (icd !== undefined) process.env.VK_DRIVER_FILES = icd;
}

/** Why no Vulkan device can be used here, or undefined when one can. */
export const noVulkan: string | undefined = (() => {
  const p = probeVulkan();
  return p.ok ? undefined : `no Vulkan device: ${p.reason}`;
})();

/** Opens the test device with the validation layer when installed (its errors fail the calls). */
export function openDevice(options: DeviceOptions = {}): VulkanDevice {
  return VulkanDevice.open({ validation: "if-available", ...options });
}

/** `n` uniform values in [lo, hi). */
export function uniformF32(n: number, r: () => number, lo = -1, hi = 1): Float32Array {
  return Float32Array.from({ length: n }, () => lo + (hi - lo) * r());
}

/** Largest |a - b| / max(1, max |b|). */
export function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let scale = 1,
    err = 0;
  for (let i = 0; i < b.length; i++) scale = Math.max(scale, Math.abs(b[i]!));
  for (let i = 0; i < b.length; i++) err = Math.max(err, Math.abs(a[i]! - b[i]!) / scale);
  return a.length === b.length ? err : Infinity;
}

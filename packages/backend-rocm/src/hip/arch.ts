// Choosing the code object for a GPU: its `gcnArchName` (e.g. `gfx942:sramecc+:xnack-`) against the
// architectures code objects were built for (`gfx90a`, `gfx942`, `gfx1100`). Feature suffixes are ignored
// because codegen builds with the target's defaults (decision 2400).

import { RocmError } from "../errors.js";

/** The processor part of a `gcnArchName`: `gfx942:sramecc+:xnack-` -> `gfx942`. */
export function baseArch(gcnArchName: string): string {
  return gcnArchName.split(":")[0]?.trim() ?? "";
}

/**
 * The code object built for `gcnArchName` out of `objects` (keyed by architecture); throws `no_code_object`
 * naming the GPU's architecture and the ones available.
 */
export function pickCodeObject<T>(gcnArchName: string, objects: Readonly<Record<string, T>>): T {
  const arch = baseArch(gcnArchName);
  const hit = objects[arch];
  if (hit !== undefined) return hit;
  const available = Object.keys(objects).sort();
  throw new RocmError(
    "no_code_object",
    `no code object for this GPU (${gcnArchName}); code objects exist for ${available.join(", ") || "no architecture"}`,
    { arch: gcnArchName, available },
  );
}

/** Finds the `gcnArchName` string in a raw hipDeviceProp_t (its offset differs between ROCm ABIs). */
export function findGcnArchName(props: Uint8Array): string | undefined {
  // name[256] comes first, so the search starts after it; gcnArchName is a NUL-terminated char[256].
  const text = new TextDecoder("latin1").decode(props);
  const re = /gfx[0-9a-f]{2,4}(?::[a-z-]+[+-])*(?=\0)/g;
  re.lastIndex = 256;
  const m = re.exec(text);
  return m?.[0];
}

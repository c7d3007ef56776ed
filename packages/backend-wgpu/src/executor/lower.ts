// Lowering for the executor: codegen's WGSL with the non-finite-literal fix applied (see wgsl-fixups.ts).
// Kept out of the browser-safe main entry because codegen's entry also carries Node-only validators.

import { lowerWgsl, type DeviceCaps, type LowerOptions, type TargetCode } from "@poot/codegen";
import type { Kernel } from "@poot/kernel-dsl";
import { runtimeNonFinite } from "../wgsl-fixups.js";

/** codegen's `lowerWgsl` plus {@link runtimeNonFinite}: what the executor compiles. */
export function lowerForWgpu(kernel: Kernel, caps: DeviceCaps, options?: LowerOptions): TargetCode {
  const code = lowerWgsl(kernel, caps, options);
  return code.text === undefined ? code : { ...code, text: runtimeNonFinite(code.text) };
}

// The registry of targets by name, for callers that pick a target at run time (`poot kernels --target`).
// Each entry is the target's one-method `lower` contract.

import type { Target, TargetName } from "./caps.js";
import { amdgpuTarget } from "./amdgpu/target.js";
import { ptxTarget } from "./ptx/target.js";
import { spirvTarget } from "./spirv/target.js";
import { wasmTarget } from "./wasm/target.js";
import { wgslTarget } from "./wgsl/target.js";
import { x86Target } from "./x86/target.js";

/** Every target, by name. */
export const TARGETS: Readonly<Record<TargetName, Target>> = {
  wgsl: wgslTarget,
  ptx: ptxTarget,
  spirv: spirvTarget,
  amdgpu: amdgpuTarget,
  wasm: wasmTarget,
  x86: x86Target,
};

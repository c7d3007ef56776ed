// One entry point for `poot kernels --validate`: runs the right validator(s) for any TargetCode.
// PTX is checked for each SM architecture and AMDGPU IR for each GPU, as the CI matrix requires.

// Kept in the emitted .d.ts (preserve): its GPU* types are @webgpu/types' globals, a dependency of this package.
/// <reference types="@webgpu/types" preserve="true" />

import type { TargetCode } from "../caps.js";
import { amdgpuGpusFor, assembleAmdgpu } from "./amdgpu.js";
import { validatePtx } from "./ptxas.js";
import type { ValidationResult } from "./result.js";
import { validateSpirv } from "./spirv-val.js";
import { assembleX86 } from "./x86.js";
import { x86Library } from "../x86/library.js";
import { validateWasm } from "./wasm.js";
import { validateWgsl } from "./dawn.js";

/** Options of {@link validateTargetCode}. */
export interface ValidateOptions {
  /** PTX architectures (default sm_90 and sm_80). */
  readonly ptxArchs?: readonly string[];
  /** AMD GPUs (default: those that have the kernel's matrix instructions, {@link amdgpuGpusFor}). */
  readonly amdgpuTargets?: readonly string[];
  /** spirv-val target environment (default vulkan1.1). */
  readonly spirvTargetEnv?: string;
  /** A WebGPU device for Tint (from `openDawnDevice`); without one WGSL results are "unavailable". */
  readonly wgslDevice?: GPUDevice;
  /** Tool paths; defaults are looked up on PATH. */
  readonly tools?: {
    readonly ptxas?: string;
    readonly spirvVal?: string;
    readonly llc?: string;
    readonly lld?: string;
  };
}

/** One validator run: what it was run for (an architecture, a GPU, or the target) and its result. */
export interface TargetValidation {
  readonly label: string;
  readonly result: ValidationResult;
}

/** Validates emitted code (or code read back from a file: only `target` and `text`/`binary` are read) with its target's own tools. */
export async function validateTargetCode(
  code: Pick<TargetCode, "target" | "text" | "binary">,
  options: ValidateOptions = {},
): Promise<TargetValidation[]> {
  const tools = options.tools ?? {};
  switch (code.target) {
    case "ptx": {
      const out: TargetValidation[] = [];
      for (const arch of options.ptxArchs ?? ["sm_90", "sm_80"])
        out.push({
          label: arch,
          result: await validatePtx(code.text!, { arch, ...(tools.ptxas ? { ptxas: tools.ptxas } : {}) }),
        });
      return out;
    }
    case "amdgpu": {
      const out: TargetValidation[] = [];
      for (const mcpu of options.amdgpuTargets ?? amdgpuGpusFor(code.text!)) {
        out.push({
          label: mcpu,
          result: await assembleAmdgpu(code.text!, {
            mcpu,
            ...(tools.llc ? { llc: tools.llc } : {}),
            ...(tools.lld ? { lld: tools.lld } : {}),
          }),
        });
      }
      return out;
    }
    case "spirv":
      return [
        {
          label: options.spirvTargetEnv ?? "vulkan1.1",
          result: await validateSpirv(code.binary!, {
            ...(options.spirvTargetEnv ? { targetEnv: options.spirvTargetEnv } : {}),
            ...(tools.spirvVal ? { spirvVal: tools.spirvVal } : {}),
          }),
        },
      ];
    case "wasm":
      return [{ label: "wasm", result: validateWasm(code.binary!) }];
    case "x86":
      return [
        {
          label: "x86-64",
          result: await assembleX86(x86Library([code], "validate"), {
            ...(tools.llc ? { llc: tools.llc } : {}),
            ...(tools.lld ? { lld: tools.lld } : {}),
          }),
        },
      ];
    case "wgsl":
      return [
        {
          label: "tint",
          result: options.wgslDevice
            ? await validateWgsl(options.wgslDevice, code.text!)
            : {
                status: "unavailable",
                tool: "tint (dawn)",
                reason: "no WebGPU device given (open one with openDawnDevice)",
              },
        },
      ];
    default:
      code.target satisfies never;
      return [];
  }
}

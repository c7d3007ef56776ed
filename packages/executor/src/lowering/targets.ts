// Lowering targets without a device: a backend kind's default caps (what `poot compile` and `poot kernels` predict
// and emit), and each backend kind's fusion policy as data, the one place it is decided.

import type { DeviceCaps as CodegenCaps, TargetName } from "@poot/codegen";
import { defaultTarget, type BackendKind, type CompileOptions, type DeviceCaps as PlanCaps } from "@poot/graph-plan";
import { synthCapsFrom } from "@poot/kernelgen";
import type { LoweringTarget } from "./types.js";

/** The backend kind whose default caps each language's kernels are planned for. */
export const BACKEND_OF: Readonly<Record<TargetName, Exclude<BackendKind, "aie">>> = {
  wgsl: "wgpu",
  ptx: "cuda",
  spirv: "vulkan",
  amdgpu: "rocm",
  wasm: "cpu",
  x86: "cpu",
};

/** The language each backend kind's kernels are lowered to. */
export const LANGUAGE_OF: Readonly<Record<Exclude<BackendKind, "aie">, TargetName>> = {
  wgpu: "wgsl",
  cuda: "ptx",
  vulkan: "spirv",
  rocm: "amdgpu",
  cpu: "wasm",
};

/** A backend kind's fusion policy: compile options, and options by step size (see {@link LoweringTarget.bySize}). */
export interface FusionPolicy {
  readonly compile: CompileOptions;
  readonly bySize?: LoweringTarget["bySize"];
}

/**
 * Fusion policy by backend kind (measured, not guessed): q/k/v stay separate launches on the CPU and CUDA (grouped,
 * they measured slower on the CPU and 0.98x on the H200, decision 0402); CUDA compiles graphs of at most 8 tokens a
 * step with block-GEMV epilogues ("any", decision 0454) and larger ones with own-element epilogues for the tiled
 * GEMM (decision 0803). Caller options override it.
 */
export function fusionPolicy(kind: Exclude<BackendKind, "aie">, compile: CompileOptions = {}): FusionPolicy {
  switch (kind) {
    case "cpu":
      return { compile: { horizontalFusion: "shared-epilogue", ...compile } };
    case "cuda": {
      const bySize =
        compile.contractionEpilogues !== undefined
          ? undefined
          : {
              maxStepTokens: 8,
              small: { contractionEpilogues: "any" as const },
              large: { contractionEpilogues: "own-element" as const },
            };
      return {
        compile: { horizontalFusion: "shared-epilogue", ...compile },
        ...(bySize !== undefined ? { bySize } : {}),
      };
    }
    default:
      return { compile };
  }
}

/** Codegen caps equivalent to graph-plan caps for `language` (storage types each language addresses natively). */
export function codegenCapsFor(language: TargetName, caps: PlanCaps): CodegenCaps {
  const dtypes: CodegenCaps["dtypes"][number][] = ["f32", "u32", "i32"];
  if (caps.dtypes.f16) dtypes.push("f16");
  // SPIR-V's 16-bit storage covers bf16 bits as well; 8-bit storage is not assumed on Vulkan 1.1 or WebGPU.
  if (caps.dtypes.bf16 || (language === "spirv" && caps.dtypes.f16)) dtypes.push("bf16");
  if (language === "ptx" || language === "amdgpu" || language === "wasm") dtypes.push("u8", "i8");
  return {
    maxWorkgroup: Math.min(caps.maxWorkgroupSize, caps.maxWorkgroupDims[0]),
    subgroupSize: caps.subgroupSize > 1 ? caps.subgroupSize : language === "wasm" ? 1 : undefined,
    sharedBytes: caps.sharedBytes,
    dtypes,
    maxStorageBuffers: caps.maxStorageBuffers,
    f16: caps.dtypes.f16,
    bf16: caps.dtypes.bf16,
    // PTX (mma.sync) and AMDGPU (MFMA, WMMA; decision 2401) issue matrix-unit instructions; other targets get none,
    // so an mma kernel is refused there.
    ...(language === "ptx" || language === "amdgpu" ? { matrixShapes: caps.matrixShapes } : {}),
  };
}

/**
 * The lowering target of `language` on its backend kind's default caps (no device): what `poot compile` predicts
 * and `poot kernels` emits. Wasm plans for one-lane subgroups (decision 0920); PTX as the CUDA device lowers
 * (split attention and block GEMVs, decisions 0804 and 0807).
 */
export function defaultLowering(language: TargetName, compile: CompileOptions = {}): LoweringTarget {
  const kind = BACKEND_OF[language];
  const plan = defaultTarget(kind, language === "wasm" ? { subgroupSize: 1 } : {}).caps as PlanCaps;
  const synth = {
    ...synthCapsFrom(plan),
    ...(language === "ptx" ? { vectorLoads: true, splitAttention: true, splitBlockGemv: true } : {}),
  };
  const policy = fusionPolicy(kind, compile);
  return {
    kind,
    language,
    plan,
    synth,
    codegen: codegenCapsFor(language, plan),
    compile: policy.compile,
    ...(policy.bySize !== undefined ? { bySize: policy.bySize } : {}),
    ...(language === "ptx" ? { lowerOptions: { arch: "sm_90" } } : {}),
    snapshotInPlace: language === "ptx" || language === "wgsl",
  };
}

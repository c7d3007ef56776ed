/**
 * @poot/codegen: lowers poot kernel IR to WGSL, PTX, SPIR-V, LLVM IR for AMDGPU and Wasm SIMD128, and runs
 * each target's own validator (Tint through Dawn, ptxas, spirv-val, llc + ld.lld, WebAssembly.validate).
 * @packageDocumentation
 */

// ── the contract ──
export type { DeviceCaps, TargetName, BindingSlot, TargetCode, LowerOptions, Target } from "./caps.js";
export type { CodegenErrorCode, CodegenErrorContext } from "./errors.js";
export { CodegenError } from "./errors.js";
export { TARGETS } from "./targets.js";

// ── targets ──
export { lowerWgsl, wgslTarget } from "./wgsl/target.js";
export { wgslIdent } from "./wgsl/names.js";
export type { PtxOptions } from "./ptx/target.js";
export { lowerPtx, ptxTarget } from "./ptx/target.js";
export { lowerSpirv, spirvTarget } from "./spirv/target.js";
export { lowerAmdgpu, amdgpuTarget } from "./amdgpu/target.js";
export { lowerX86, x86Target, X86_TRIPLE } from "./x86/target.js";
export { x86Library, X86_KERNEL_CPU, X86_VNNI_CPU, X86_WIDE_KERNEL_CPU } from "./x86/library.js";
export type { X86Code } from "./x86/library.js";
export type { X86Dot4 } from "./x86/select.js";
export {
  assembleArm64,
  assembleX86,
  ARM64_LLC_ARGS,
  ARM64_OPT_ARGS,
  X86_LLC_ARGS,
  X86_LLD_ARGS,
  X86_OPT_ARGS,
} from "./validate/x86.js";
export { arm64Library, ARM64_TRIPLE } from "./x86/arm64.js";
export type { X86ToolOptions } from "./validate/x86.js";
export type { WmmaGather, WmmaGatherWord } from "./amdgpu/mma.js";
export { WMMA_A, WMMA_B, WMMA_KEEP_BIT, amdMatrixIntrinsic } from "./amdgpu/mma.js";
export { MMA_NEEDS } from "./common/prepare.js";
export type { WasmOptions } from "./wasm/target.js";
export { lowerWasm, wasmTarget } from "./wasm/target.js";

// ── validators ──
export type { ValidationResult } from "./validate/result.js";
export type { ValidateOptions, TargetValidation } from "./validate/all.js";
export { validateTargetCode } from "./validate/all.js";
export type { PtxasOptions } from "./validate/ptxas.js";
export { validatePtx } from "./validate/ptxas.js";
export type { SpirvValOptions } from "./validate/spirv-val.js";
export { validateSpirv } from "./validate/spirv-val.js";
export type { AmdgpuBatchOptions, AmdgpuToolOptions } from "./validate/amdgpu.js";
export { amdgpuGpusFor, assembleAmdgpu, assembleAmdgpuMany } from "./validate/amdgpu.js";
export { validateWasm } from "./validate/wasm.js";
export type { DawnOptions, DawnDevice, DawnOpenResult } from "./validate/dawn.js";
export { openDawnDevice, validateWgsl } from "./validate/dawn.js";

// ── binary encoders ──
export type { SpirvModuleOptions } from "./spirv/module.js";
export { SpirvModule } from "./spirv/module.js";
export { SpirvFunction } from "./spirv/function.js";
export type { MemoryImport } from "./wasm/module.js";
export { WasmModule, ValType } from "./wasm/module.js";
export { WasmCode } from "./wasm/code.js";

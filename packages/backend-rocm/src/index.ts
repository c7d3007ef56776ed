// @poot/backend-rocm: the ROCm pieces a Device wraps — code object metadata, kernarg packing, the HIP runtime.

export { RocmError, type RocmErrorCode, type RocmErrorContext } from "./errors.js";
export { EM_AMDGPU, readElfNotes, type ElfNote } from "./elf.js";
export {
  decodeMetadata,
  NT_AMDGPU_METADATA,
  readCodeObjectMetadata,
  type CodeObjectMetadata,
  type KernelArgMeta,
  type KernelMeta,
} from "./metadata.js";
export {
  checkLayout,
  expectedLayout,
  packKernargs,
  signatureOf,
  type ExpectedArg,
  type KernargSignature,
  type KernargValues,
  type LaunchDims,
  type PackedKernargs,
} from "./kernargs.js";
export { baseArch, findGcnArchName, pickCodeObject } from "./hip/arch.js";
export { hipLibraryCandidates, loadHipLibrary, type HipLibraryOptions } from "./hip/library.js";
export { HIP_PROTOTYPES, type Handle, type HipApi, type HipFn } from "./hip/ffi.js";
export { HipRuntime, type HipRuntimeOptions } from "./hip/runtime.js";

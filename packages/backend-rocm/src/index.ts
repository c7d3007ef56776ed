// @poot/backend-rocm: the ROCm executor (a Device of the generic staged program) and its pieces — code object
// metadata, kernarg packing, code objects built per GPU, the HIP runtime.

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
export {
  buildKernelImage,
  CodeObjectBuilder,
  packLaunch,
  rocmLowering,
  rocmPlanCaps,
  ROCM_GPUS,
  type RocmKernelImage,
  type ToolchainOptions,
} from "./executor/program.js";
export {
  RocmDevice,
  type RocmBuffer,
  type RocmKernel,
  type RocmLaunch,
  type RocmRecording,
} from "./executor/device.js";
export {
  createRocmExecutor,
  isRocmExecutor,
  type RocmExecutor,
  type RocmExecutorOptions,
  type RocmProgram,
} from "./executor/executor.js";

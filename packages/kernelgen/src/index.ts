/**
 * The poot kernel library (imported kernels compiled from the kernel DSL) and the kernel synthesizers.
 * @packageDocumentation
 */
export { KernelgenError, invariant } from "./errors.js";
export type { KernelgenErrorCode, KernelgenErrorContext } from "./errors.js";
export { IMPORTED_KERNELS, importedKernel, missingImportedAssets } from "./library.js";
export type { ImportedKernelName } from "./library.js";
export { pow2Workgroup, grid2d, gridLimits, checkGrid, cpuSynthCaps } from "./caps.js";
export type { SynthCaps, SynthKernel } from "./caps.js";
export type { ExprNode, ExprType, UnaryFn, BinaryFn, CmpFn } from "./synth/expr.js";
export type { StorageDType } from "./synth/storage.js";
export { synthesizeElementwise } from "./synth/elementwise.js";
export type { ElementwiseRequest, ElementwiseInput, ElementwiseOutput } from "./synth/elementwise.js";
export { synthesizeReductionRow } from "./synth/reduction.js";
export type { ReductionRowRequest, RowInput, RowReduction, RowOutput } from "./synth/reduction.js";
export type { Epilogue, EpilogueInput } from "./synth/epilogue.js";
export { synthesizeGemv } from "./synth/gemv.js";
export type { GemvRequest } from "./synth/gemv.js";
export { synthesizeGemm, chooseGemmTiling } from "./synth/gemm.js";
export type { GemmRequest, GemmTiling } from "./synth/gemm.js";
export {
  synthesizeMmaGemm,
  chooseMmaTiling,
  mmaGemmApplies,
  hasMmaUnit,
  mmaAMode,
  mmaShapeFor,
} from "./synth/gemm-mma.js";
export type { MmaGemmTiling } from "./synth/gemm-mma.js";
export { synthesizeDequantGemv } from "./synth/dequant.js";
export {
  FASTX_GROUP,
  NATIVE_EPILOGUES,
  NATIVE_GEMV_UNIFORMS,
  nativeGemvKernel,
  nativeFastLibrary,
  nativeGemvLibrary,
  nativeGemvName,
  nativeQuantKernel,
} from "./synth/gemv-native.js";
export { ACT_BLOCK, ACT_SUM, FAST_FORMATS, NATIVE_QUANT_UNIFORMS, nativeQuantName } from "./synth/gemv-int8.js";
export type { ActivationQuant, FastCol, FastParts } from "./synth/gemv-int8.js";
export { nativeSlabScratch, SLAB_TILE } from "./synth/gemv-int8-slab.js";
export type { NativeDense, NativeEpilogue, NativeLanes, NativeNumerics, NativeWeights } from "./synth/gemv-native.js";
export type { DequantGemvRequest } from "./synth/dequant.js";
export { synthesizeMovement } from "./synth/movement.js";
export type { MovementOp, MovementRequest } from "./synth/movement.js";
export { synthesizeAttention, attentionLanes, attentionMinSplitKeys, attentionSplits } from "./synth/attention.js";
export type { AttentionRequest, SplitAttention, Strides4 } from "./synth/attention.js";
export { synthesizeRope } from "./synth/rope.js";
export type { RopeRequest } from "./synth/rope.js";
export { synthesizeIndexedMatMul } from "./synth/indexed.js";
export type { IndexedMatMulRequest } from "./synth/indexed.js";
export { synthesizeRequest, synthCapsFrom } from "./adapter/request.js";
export type { RequestKernel, BindingSource } from "./adapter/request.js";
export { stridedFallback } from "./synth/strided.js";
export { GREEDY_WG, greedyArgmax, greedyNext } from "./greedy.js";
export { importedLaunch } from "./launch.js";
export { planKernel, reduceAsRows, squeezeWeightBatch, synthesizesFaster } from "./adapter/plan-kernel.js";
export type { PlanKernel } from "./adapter/plan-kernel.js";
export { isDense } from "./adapter/access.js";
export type { ImportedLaunch, LaunchCaps } from "./launch.js";
export { interpretProgram, bytesToWords } from "./interpret-program.js";
export type { InterpretProgramOptions, ProgramRun } from "./interpret-program.js";

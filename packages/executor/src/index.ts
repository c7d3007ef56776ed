/**
 * @poot/executor: the contract every poot backend implements (stage, bind weights, slots, steps with
 * device-side State, outputs, capture/replay, device bytes), the slot/state logic backends share, the Device
 * interface and the one generic staged program that runs a lowered program on any device. The lowering and its
 * cache are at `@poot/executor/lowering`, the conformance suite at `@poot/executor/conformance`; the reference
 * backends (eval, interp) are `@poot/backend-reference`.
 * @packageDocumentation
 */
export type {
  CompiledGraph,
  DeviceBytes,
  Executor,
  ExecutorCaps,
  GreedyLoop,
  GreedyLoopOptions,
  OutputData,
  StageInput,
  StageOptions,
  StagedProgram,
  StateSet,
  WeightSource,
  WeightFileRange,
} from "./contract.js";
export { stageParts } from "./contract.js";
export { ExecutorError } from "./errors.js";
export type { ExecutorErrorCode, ExecutorErrorContext } from "./errors.js";
export {
  checkSlotData,
  checkSlotsWritten,
  elementBytes,
  readWeight,
  sameLaneLayout,
  schemaOf,
  slotSpecFor,
} from "./schema.js";
export { viewLayout, viewRuns } from "./views.js";
export type { ViewLayout } from "./views.js";
export type { ConstSpec, OutputSpec, ProgramSchema, SlotSpec, StateSpec } from "./schema.js";
export {
  HostStateSet,
  allocHostBuffer,
  checkStateFor,
  hostArrayType,
  laneCount,
  loadHost,
  storeHost,
} from "./host-state.js";
export type { HostArrayType, HostBuffer } from "./host-state.js";
export { bytesOf, outputOf, storageOf, viewOf } from "./storage.js";
export { DeviceError } from "./device.js";
export type { Device, DeviceBuffer, DeviceCaps, DeviceErrorCode, DeviceOp } from "./device.js";
export { DeviceExecutor, DeviceProgram } from "./staged.js";
export type { KernelTiming, Lower } from "./staged.js";
export { DeviceStateSet } from "./staged-state.js";
export { phaseTotals, timed, timingOn } from "./timing.js";
export { stateCopies, viewRegions } from "./regions.js";
export type { ByteRegion, StateCopy } from "./regions.js";
export type {
  LoweredArg,
  LoweredBuffer,
  LoweredBufferKind,
  LoweredCopy,
  LoweredKernel,
  LoweredLaunch,
  LoweredOutput,
  LoweredProgram,
  LoweringTarget,
  RoutedLaunch,
  RoutedPlan,
  RoutedSource,
} from "./lowering/types.js";
export type { NativeKernels } from "./lowering/native.js";
export { TensorParallelExecutor, rankWeights } from "./tp/tp-executor.js";
export type { TensorParallelOptions } from "./tp/tp-executor.js";
export { TensorParallelStagedProgram } from "./tp/tp-program.js";
export type { CollectiveStats } from "./tp/tp-program.js";
export { TensorParallelStateSet } from "./tp/tp-state.js";
export { allGather, allReduceSum, slicePiece } from "./tp/host-collectives.js";

/**
 * The poot compiler: Target + DeviceCaps, the fixed pass pipeline (recognition, fusion, tiling),
 * composite ops with reference semantics, and planning into a Program.
 * @packageDocumentation
 */

export { PlanError, PlanInvariantError, invariant } from "./errors.js";
export type { PlanErrorCode, PlanErrorContext } from "./errors.js";

export {
  BACKEND_KINDS,
  ROCM_ARCHS,
  defaultTarget,
  makeTarget,
  planLimits,
  swigluHeads,
  swigluRequest,
} from "./target.js";
export type { AieCaps, BackendKind, DTypeSupport, DeviceCaps, MatrixShape, PlanLimits, Target } from "./target.js";

export { resolveOptions } from "./options.js";
export type { CompileOptions, ResolvedOptions } from "./options.js";

export { compile } from "./compile.js";
export { Program } from "./program.js";
export type { DispatchBreakdown } from "./program.js";
export { PASS_ORDER } from "./passes/pipeline.js";
export type { PassInfo } from "./passes/pipeline.js";
export type { Decline, NumericalDecline, NumericalReason, PassName, PassNumerics, PassReport } from "./rules.js";

export { COMPOSITE_OPS, PLAN_OPS } from "./composite/table.js";
export type { CompositeOp } from "./composite/table.js";
export { REGION_OPS } from "./composite/rope.js";
export type { RopeParams } from "./composite/rope.js";
export type { AttentionMaskKind, AttentionParams } from "./composite/attention.js";
export type { ContractionParams } from "./composite/contraction.js";
export type { HorizontalGroup } from "./passes/horizontal.js";
export type { FusedParams } from "./composite/fused.js";
export type { ExpertRouting, IndexedMatMulParams } from "./composite/indexed.js";
export type { ArgMaxChunkParams } from "./composite/argmax.js";
export { evalRegion, swigluGate, typeRegion } from "./region.js";
export type { Region, RegionArg, RegionLiteral, RegionNode } from "./region.js";

export type {
  Access,
  BufferAssignment,
  BufferPlan,
  Dispatch,
  KernelKind,
  KernelRequest,
  KernelSource,
  Plan,
  SlotSpec,
} from "./plan/types.js";

export { shardGraph, ShardedProgram } from "./tp/plan.js";
export type { CollectivePlan, WeightShardInfo } from "./tp/plan.js";
export type { ShardOptions } from "./tp/propagate.js";
export type { CollectiveKind } from "./tp/logical.js";
export type { SegmentInput, SegmentPlan } from "./tp/emit.js";
export { CARRY_SLOT, COLLECTIVE_SLOT } from "./tp/emit.js";
export { SHARD_RULES, parseShardKey, shardAxis, shardKey, shardStyle } from "./tp/rules.js";
export type { ShardRule, ShardStyle, WeightShard } from "./tp/rules.js";
export type { LEqn, LogicalGraph, LValue, Sharding } from "./tp/logical.js";

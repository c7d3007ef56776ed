/**
 * @poot/runtime: the LLM driver over any @poot/executor backend — an Engine per model, sessions with
 * a paged KV cache in one shared pool per engine, recurrent-state lanes, chunked prefill, batched decode, seeded sampling with penalties, stop
 * strings and streaming detokenization.
 * @packageDocumentation
 */
export { Engine, prefillChunks } from "./engine.js";
export type { EngineOptions, EngineStats, EngineStatsSnapshot } from "./engine.js";
export { greedyArgmax } from "@poot/kernelgen";
export { hostGreedyLoop } from "./greedy.js";
export type { GreedyOptions } from "./greedy.js";
export { KvPool } from "./kv-pool.js";
export type { KvPoolStats } from "./kv-pool.js";
export { Session } from "./session.js";
export { RuntimeError } from "./errors.js";
export type { RuntimeErrorCode } from "./errors.js";
export { Rng, randomSeed } from "./rng.js";
export { applyPenalties, argmax, checkSampling, drawToken, sampleToken, samplingDistribution } from "./sampling.js";
export type { Distribution, SamplingOptions } from "./sampling.js";
export { StopMatcher } from "./stop.js";
export type { StopPush } from "./stop.js";
export { generate, generateAll, generateAsync } from "./generate.js";
export { Decoding, checkGenerate, tokenLogprobs } from "./decoding.js";
export { Scheduler } from "./scheduler.js";
export type { RequestHandle, SchedulerOptions, SchedulerStats } from "./scheduler.js";
export type { FinishReason, GenerateOptions, GenerationEvent, GenerationResult, TokenLogprob } from "./decoding.js";
export { BlockPipeline } from "./blocks/pipeline.js";
export type { BlockDevice, PagingOptions, PipelineStats, PlacementReport, UnitCompiler } from "./blocks/pipeline.js";
export { Pager } from "./blocks/pager.js";
export type { PagerHost, PagerStats } from "./blocks/pager.js";
export { PipelineProgram, PipelineState } from "./blocks/program.js";
export { Unit } from "./blocks/unit.js";
export { WeightReader } from "./blocks/weight-reader.js";
export type { WeightReadStats } from "./blocks/weight-reader.js";
export { RESIDUAL, blockName, closure, findBlocks, unitGraph } from "./blocks/cut.js";
export type { BlockCut, BlockInfo, BlockKind } from "./blocks/cut.js";
export {
  fitPlacement,
  formatPlacement,
  gpuLayers,
  parsePlacement,
  parseSize,
  placeAll,
  unitSpans,
  weightBytesOn,
} from "./blocks/placement.js";
export type { FitPlacement, Placement, UnitSpan } from "./blocks/placement.js";
export { PrefixCache } from "./prefix-cache.js";
export type { PrefixCacheStats } from "./prefix-cache.js";

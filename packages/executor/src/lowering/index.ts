/**
 * @poot/executor/lowering: the one lowering (`lowerProgram`: graph-plan, kernelgen and codegen for a target, as plain
 * data) and its content-hashed disk cache. Node-only (codegen's entry and the cache use Node modules).
 * @packageDocumentation
 */
export { lowerProgram, stepTokens } from "./lower.js";
export type { LowerProgramOptions } from "./lower.js";
export {
  LOWERING_VERSION,
  LoweringCache,
  codeFingerprintOf,
  deserialize,
  loweringCodeFingerprint,
  loweringKey,
  lowerWith,
  serialize,
} from "./cache.js";
export type { BlobStore, CacheOutcome, CacheStats, LoweringCacheOptions } from "./cache.js";
export { launchesOf } from "./types.js";
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
} from "./types.js";
export { BACKEND_OF, LANGUAGE_OF, codegenCapsFor, defaultLowering, fusionPolicy } from "./targets.js";
export type { FusionPolicy } from "./targets.js";
export type { NativeKernels } from "./native.js";

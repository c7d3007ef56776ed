/**
 * The OpenAI-compatible HTTP server of poot (with Prometheus /metrics) over the runtime, and the `serve`
 * command's implementation that `@poot/cli` registers in the `poot` program.
 * @packageDocumentation
 */
export type { CliIo, CommandModule, ExecutorFactory } from "./command.js";
export {
  ACTIVATION_NUMERICS,
  ACTIVATIONS_HELP,
  activationsOption,
  NUMERICS_HELP,
  numericsOption,
  parseActivations,
  parseNumerics,
} from "./commands/activations.js";
export type { CpuNumerics } from "./commands/activations.js";
export { parseNumber } from "./commands/numbers.js";
export { readTextFile } from "./commands/read-file.js";
export { serveCommand, startServe } from "./commands/serve.js";
export type { ExecutorModule, ServeCliOptions, StartedServer } from "./commands/serve.js";
export { SERVE_CONFIG_SCHEMA, readServeConfig } from "./commands/serve-config.js";
export type { ServeConfig, ServeConfigModel } from "./commands/serve-config.js";
export { ApiError, CliError, invariant } from "./errors.js";
export type { ApiErrorBody, ApiErrorCode, ApiErrorType, CliErrorCode } from "./errors.js";
export type {
  Admission,
  BatchEngine,
  EngineSequence,
  EngineStats,
  PlacementSummary,
  PromptLogprob,
  JsonConstraintSpec,
  RelocateResult,
  SamplingParams,
  SequenceEvent,
  RemoteServeEngine,
  SequenceOptions,
  ServeEngine,
  TokenLogprob,
} from "./server/engine.js";
export { EngineWorker, EngineWorkerError } from "./server/engine-worker.js";
export type { EngineWorkerInfo, EngineWorkerLoad, EngineWorkerOptions } from "./server/engine-worker.js";
export type { MetricsCompat, MetricsOptions, ServerMetrics } from "./server/metrics.js";
export { ModelPool } from "./server/model-pool.js";
export type {
  LoadedEngine,
  ModelInstance,
  ModelLease,
  ModelPoolObserver,
  ModelPoolOptions,
  ServedModel,
} from "./server/model-pool.js";
export { RuntimeServeEngine } from "./server/runtime-engine.js";
export type { RuntimeServeEngineOptions } from "./server/runtime-engine.js";
export { Scheduler } from "./server/scheduler.js";
export type {
  DoneEvent,
  ErrorEvent,
  FinishReason,
  GenerationEvent,
  GenerationJob,
  GenerationRequest,
  JobSink,
  SchedulerObserver,
  SchedulerOptions,
  ServeScheduler,
  TokenEvent,
} from "./server/scheduler-api.js";
export { createServer } from "./server/server.js";
export type { PootServer, ServerOptions, SocketLimits } from "./server/server.js";
export {
  DEVICE_WEIGHT_SHARE,
  blockCutOf,
  createDevices,
  cutOfGraph,
  describePlacement,
  deviceMemoryOf,
  engineDevices,
  placementOptions,
  placementReportOf,
  planDevices,
  planPlacement,
} from "./placement.js";
export type { PlacedDevices, PlacementFlags, PlacementPlan, PlannedDevices } from "./placement.js";

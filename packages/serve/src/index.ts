/**
 * The poot command-line interface (`poot`) and the OpenAI-compatible HTTP server (`poot serve`):
 * the program, its subcommand table, the server over the runtime, and their errors.
 * @packageDocumentation
 */
export { EXIT_USAGE, cliVersion, createProgram, runCli } from "./cli.js";
export { bandwidthFloor } from "./commands/bench.js";
export type { BandwidthFloor, BenchReport } from "./commands/bench.js";
export type { CliOptions } from "./cli.js";
export { commands } from "./commands/index.js";
export { compileReport, trace } from "./commands/compile.js";
export { KERNEL_TARGETS, compileFor, emitKernels } from "./commands/kernels-emit.js";
export type { EmittedKernel } from "./commands/kernels-emit.js";
export type { CliIo, CommandModule } from "./commands/index.js";
export { startServe } from "./commands/serve.js";
export type { ServeCliOptions, StartedServer } from "./commands/serve.js";
export { ApiError, CliError } from "./errors.js";
export type { ApiErrorBody, ApiErrorCode, ApiErrorType, CliErrorCode } from "./errors.js";
export { bufferIo, processIo } from "./io.js";
export type { Admission, EngineSequence, EngineStats, SamplingParams, SequenceEvent, SequenceOptions, ServeEngine, TokenLogprob } from "./server/engine.js";
export type { ServerMetrics } from "./server/metrics.js";
export { RuntimeServeEngine } from "./server/runtime-engine.js";
export type { RuntimeServeEngineOptions } from "./server/runtime-engine.js";
export { Scheduler } from "./server/scheduler.js";
export type { DoneEvent, ErrorEvent, FinishReason, GenerationEvent, GenerationJob, GenerationRequest, SchedulerObserver, SchedulerOptions, TokenEvent } from "./server/scheduler.js";
export { createServer } from "./server/server.js";
export type { PootServer, ServerOptions } from "./server/server.js";

/**
 * The poot command-line interface (`poot`): the program, its subcommand table and the backends it runs on.
 * The HTTP server and the `serve` command's implementation are `@poot/serve`'s.
 * @packageDocumentation
 */
export { EXIT_USAGE, cliVersion, createProgram, runCli } from "./cli.js";
export { bandwidthFloor } from "./commands/bench-report.js";
export type { BandwidthFloor, BenchReport } from "./commands/bench-report.js";
export type { TensorParallelBench } from "./commands/bench-tp.js";
export type { CliOptions } from "./cli.js";
export { commands } from "./commands/index.js";
export { compileReport, trace, type LoweringReport } from "./commands/compile.js";
export { KERNEL_TARGETS, compileFor, emitKernels } from "./commands/kernels-emit.js";
export type { EmittedKernel } from "./commands/kernels-emit.js";
export type { CliIo, CommandModule } from "./commands/index.js";
export { CliError } from "./errors.js";
export type { CliErrorCode } from "./errors.js";
export { bufferIo, processIo } from "./io.js";

/**
 * The poot command-line interface (`poot`): the program, its subcommand table and its errors.
 * @packageDocumentation
 */
export { EXIT_USAGE, cliVersion, createProgram, runCli } from "./cli.js";
export type { CliOptions } from "./cli.js";
export { commands } from "./commands/index.js";
export type { CliIo, CommandModule } from "./commands/index.js";
export { CliError } from "./errors.js";
export { bufferIo, processIo } from "./io.js";
export type { CliErrorCode } from "./errors.js";

// The shape of a `poot` subcommand, shared by @poot/cli (which owns the program and its table) and the
// `serve` command defined here; the CLI passes in how it makes executors, so this package loads no backend.
import type { Executor } from "@poot/executor";
import type { Command } from "commander";

/** Where a command writes: stdout and stderr in the real CLI, buffers in tests. */
export interface CliIo {
  /** Writes to standard output (text as given, no newline added). */
  readonly out: (text: string) => void;
  /** Writes to standard error (text as given, no newline added). */
  readonly err: (text: string) => void;
}

/** One subcommand: a name and a function that adds it (arguments, options, action) to the program. */
export interface CommandModule {
  /** The subcommand's name as typed after `poot`, e.g. `"ir"`. */
  readonly name: string;
  /** Adds the subcommand to `program`; its action writes through `io` and throws `CliError` on bad input. */
  readonly register: (program: Command, io: CliIo) => void;
  /**
   * Checks the parsed options (commander's, all strings) and throws a CliError for a bad value; the CLI calls it
   * before `--backend auto` probes the backends (about a second), so a bad flag fails at once.
   */
  readonly checkFlags?: (options: Record<string, unknown>) => void;
}

/**
 * Makes a fresh executor for a `--backend` name on behalf of `command` (named in error messages);
 * throws a CliError for a backend it does not know or cannot start.
 */
export type ExecutorFactory = (backend: string, command: string) => Executor;

// Typed errors of the poot CLI: bad command tables and failed commands, each with a stable `code`.
// Usage errors (unknown command, missing argument) are commander's and map to exit code 2 in runCli.

/** Stable codes of {@link CliError}. */
export type CliErrorCode =
  /** Two command modules in one table share a name. */
  | "duplicate-command"
  /** A file named on the command line cannot be read (missing, a directory, no permission). */
  | "file-unreadable"
  /** A file's contents are not what the command takes (bad JSON, an invalid graph, ...). */
  | "bad-input"
  /** A command failed on the user's request for another reason, said in the message. */
  | "command-failed";

/** An error the CLI reports to the user as `poot: <message>` with exit code 1. */
export class CliError extends Error {
  override readonly name = "CliError";

  /**
   * @param code - the stable error code.
   * @param message - what went wrong, for the user.
   * @param context - the command and, where known, the file the error concerns.
   */
  constructor(
    readonly code: CliErrorCode,
    message: string,
    readonly context: { readonly command?: string; readonly file?: string } = {},
  ) {
    super(message);
  }
}

/** Throws an internal-bug error when `condition` is false (never for bad user input). */
export function invariant(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`poot internal error: ${message}`);
}

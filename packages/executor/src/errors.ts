// Typed errors of @poot/executor: bad slot/state/output use by a caller, each with a stable `code` and
// the program, key and sizes it concerns. Internal bugs go through `invariant()` instead.

/** Stable codes of {@link ExecutorError}. */
export type ExecutorErrorCode =
  /** A slot key the staged program does not have. */
  | "unknown-slot"
  /** Slot data of the wrong length, or values a slot's dtype cannot hold. */
  | "slot-mismatch"
  /** `run` before every slot of the program was written once. */
  | "slot-unwritten"
  /** An output name the staged program does not have. */
  | "unknown-output"
  /** A state key the program does not have, or a StateSet made for another layout. */
  | "unknown-state"
  /** State data of the wrong length or dtype, or a lane index out of range. */
  | "state-mismatch"
  /** A program that reads weights was run before `bindWeights`. */
  | "unbound-weights"
  /** A weight source returned data of the wrong size for a Const. */
  | "weight-mismatch"
  /** A dtype the backend cannot hold (its caps do not list it). */
  | "unsupported-dtype"
  /** A graph the backend cannot plan, or a plan it has no kernel for (the message names the plan). */
  | "unsupported-program"
  /** `replay` with nothing captured, or capture on a backend that cannot. */
  | "not-captured"
  /** Use of a disposed executor, program or StateSet. */
  | "disposed";

/** What an {@link ExecutorError} concerns. */
export interface ExecutorErrorContext {
  /** The staged program's name. */
  readonly program?: string;
  /** Slot, state, output or weight key. */
  readonly key?: string;
  /** Expected element count or index bound. */
  readonly expected?: number;
  /** What was given. */
  readonly actual?: number | string;
}

/** The one error class of @poot/executor; switch on `code`. */
export class ExecutorError extends Error {
  override readonly name = "ExecutorError";
  /**
   * @param code - stable error code.
   * @param message - what went wrong, for the user.
   * @param context - the program and key it concerns.
   */
  constructor(
    readonly code: ExecutorErrorCode,
    message: string,
    readonly context: ExecutorErrorContext = {},
  ) {
    super(
      `[${code}]${context.program !== undefined ? ` program ${context.program}:` : ""}${context.key !== undefined ? ` "${context.key}":` : ""} ${message}`,
    );
  }
}

/** Throws an internal-bug error when `cond` is false (never for bad caller input). */
export function invariant(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`@poot/executor internal error: ${message}`);
}

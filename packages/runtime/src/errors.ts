// Typed errors of @poot/runtime: bad sampling parameters, token ids, context overflow and misuse of
// sessions, each with a stable `code` and the value it concerns.

/** Stable codes of {@link RuntimeError}. */
export type RuntimeErrorCode =
  /** A sampling parameter out of range (temperature < 0, top-p outside (0, 1], ...). */
  | "bad-sampling"
  /** A token id outside the vocabulary, or no tokens where some are needed. */
  | "bad-tokens"
  /** The tokens would not fit the session's context. */
  | "context-overflow"
  /** A released session was used, or a session of another engine was passed. */
  | "bad-session"
  /** A model or option the engine cannot run (no tokenizer for text, a bad context size). */
  | "bad-config"
  /** The scheduler's waiting queue is full. */
  | "busy"
  /** The KV page pool (or the recurrent-state lanes) cannot hold more tokens now. */
  | "kv-full"
  /** A request needs more KV pages than the whole pool has: it can never run. */
  | "kv-capacity"
  /** The logits have no finite maximum (NaN everywhere or every token at -inf): nothing can be sampled. */
  | "bad-logits"
  /** A placement that cannot run: an unknown device, overlapping or missing layers, a budget below a block. */
  | "bad-placement"
  /** A traced graph that cannot be cut into blocks (a value other than the residual stream crosses a boundary). */
  | "bad-graph";

/** The one error class of @poot/runtime; switch on `code`. */
export class RuntimeError extends Error {
  override readonly name = "RuntimeError";
  /**
   * @param code - stable error code.
   * @param message - what went wrong, for the user.
   * @param context - the parameter name and value, or the session id, it concerns.
   */
  constructor(
    readonly code: RuntimeErrorCode,
    message: string,
    readonly context: { readonly param?: string; readonly value?: unknown; readonly session?: number } = {},
  ) {
    super(`[${code}] ${message}`);
  }
}

/** Throws an internal-bug error when `cond` is false (never for bad caller input). */
export function invariant(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`@poot/runtime internal error: ${message}`);
}

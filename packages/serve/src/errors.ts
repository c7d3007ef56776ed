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

/** Stable codes of {@link ApiError}: the `error.code` an OpenAI-compatible client receives. */
export type ApiErrorCode =
  /** The body is not JSON, or not JSON of the endpoint's shape (a wrong type, a missing field). */
  | "invalid_request"
  /** A parameter is of the right type but outside its range. */
  | "invalid_value"
  /** The body is not `application/json`. */
  | "unsupported_media_type"
  /** The request names a model this server does not serve. */
  | "model_not_found"
  /** No such endpoint. */
  | "not_found"
  /** The prompt (and max_tokens) do not fit the context. */
  | "context_length_exceeded"
  /** The Host header (or an absolute-form target) names a host this server does not answer for. */
  | "host_not_allowed"
  /** No API key, or the wrong one. */
  | "invalid_api_key"
  /** The wait queue is full: retry later. */
  | "server_busy"
  /** The request needs more KV cache pages than the server has in all (it could never run). */
  | "kv_capacity_exceeded"
  /** The request has more generations (prompts x n) than the queue holds: it could never be queued. */
  | "too_many_generations"
  /** The request waited longer than the queue timeout for a slot. */
  | "queue_timeout"
  /** The server is shutting down. */
  | "server_shutting_down"
  /** The model cannot be loaded now: the memory budget is held by other models serving requests (retry later). */
  | "model_busy"
  /** The model failed to load (its engine could not start). */
  | "model_load_failed"
  /** The request body is larger than the server accepts. */
  | "request_too_large"
  /** POST /admin/place named a placement the engine cannot take (unknown device, overlap, unplaced layers, ...). */
  | "invalid_placement"
  /** A bug or an engine failure; the server stays up. */
  | "internal_error";

/** The OpenAI error `type` each status family uses. */
export type ApiErrorType = "invalid_request_error" | "authentication_error" | "rate_limit_error" | "server_error";

/** The JSON body of an error response, as the OpenAI API and its clients expect it. */
export interface ApiErrorBody {
  readonly error: {
    readonly message: string;
    readonly type: ApiErrorType;
    readonly param: string | null;
    readonly code: ApiErrorCode;
  };
}

/** An HTTP API error: status, OpenAI error type, stable code and the parameter it concerns. */
export class ApiError extends Error {
  override readonly name = "ApiError";

  /**
   * @param status - the HTTP status.
   * @param code - the stable error code.
   * @param message - what went wrong, for the client.
   * @param param - the request parameter concerned (`"messages[0].content"`, `"max_tokens"`), or null.
   * @param headers - response headers the error carries (e.g. `retry-after` on a 429).
   */
  constructor(
    readonly status: number,
    readonly code: ApiErrorCode,
    message: string,
    readonly param: string | null = null,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }

  /** The OpenAI error `type` for this status. */
  get type(): ApiErrorType {
    if (this.status === 401) return "authentication_error";
    if (this.status === 429) return "rate_limit_error";
    return this.status >= 500 ? "server_error" : "invalid_request_error";
  }

  /** The response body. */
  body(): ApiErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

// Any error a request can raise -> an ApiError: fastify's schema-validation, body-parsing and size
// errors keep their 4xx status with an OpenAI code and the parameter's path; anything else is a 500.
import type { FastifyError } from "fastify";
import { ApiError } from "../errors.js";

interface AjvIssue {
  readonly instancePath: string;
  readonly keyword: string;
  readonly message?: string;
  readonly params: Record<string, unknown>;
}

/** `/messages/0/content` -> `messages[0].content`. */
function paramOf(issue: AjvIssue): string | null {
  const parts = issue.instancePath.split("/").slice(1);
  if (issue.keyword === "required" && typeof issue.params.missingProperty === "string")
    parts.push(issue.params.missingProperty);
  if (parts.length === 0) return null;
  return parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc === "" ? p : `${acc}.${p}`), "");
}

const RANGE_KEYWORDS = new Set([
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minItems",
  "maxItems",
  "minLength",
  "maxProperties",
  "const",
  "enum",
]);

/** Maps an error thrown while handling a request to the ApiError the client receives. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as Partial<FastifyError> & { validation?: AjvIssue[] };
  if (Array.isArray(e.validation) && e.validation.length > 0) {
    // Of anyOf branches, the one that failed on a range says more than those of the wrong type.
    const issue = e.validation.find((i) => i.keyword !== "type" && i.keyword !== "anyOf") ?? e.validation[0]!;
    const param = paramOf(issue);
    const code = RANGE_KEYWORDS.has(issue.keyword) ? "invalid_value" : "invalid_request";
    return new ApiError(400, code, `${param ?? "body"} ${issue.message ?? "is invalid"}`, param);
  }
  switch (e.code) {
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new ApiError(415, "unsupported_media_type", "the body must be application/json");
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new ApiError(413, "request_too_large", "the request body is too large");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return new ApiError(400, "invalid_request", "the body is empty: send a JSON object");
    case "FST_ERR_CTP_INVALID_JSON_BODY":
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new ApiError(400, "invalid_request", `the body is not valid JSON: ${e.message ?? ""}`);
    default:
      break;
  }
  // Fastify's own client errors (e.g. JSON syntax from the parser) carry a 4xx statusCode.
  if (typeof e.statusCode === "number" && e.statusCode >= 400 && e.statusCode < 500) {
    return new ApiError(400, "invalid_request", `invalid request: ${e.message ?? "bad body"}`);
  }
  return new ApiError(500, "internal_error", `internal error: ${e.message ?? String(err)}`);
}

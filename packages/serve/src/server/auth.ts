// API-key checks on the ROUTED request: the hook runs after fastify's router has matched the request, and
// decides from the matched route (never from the raw URL), so every spelling the router accepts
// (percent-encoded, absolute-form, double slashes, other case) is checked exactly like the canonical path.
// A raw-URL prefix test let `/%761/completions` through while the router served it (issue #20).
import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { ApiError } from "../errors.js";

/** Which routes need the key and what it is. */
export interface AuthPolicy {
  /** The key `Authorization: Bearer <key>` (or `x-api-key: <key>`) must carry; null = no key needed anywhere. */
  readonly apiKey: string | null;
  /** Routes (fastify route patterns, e.g. `/health`) that never need the key. */
  readonly open: ReadonlySet<string>;
}

/**
 * Constant-time comparison of two secrets of any lengths: both are hashed (SHA-256) first, so the
 * comparison is over equal-length digests and neither the time nor an early length check says how much
 * of the key was right, or how long it is.
 */
export function sameSecret(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given, "utf8").digest();
  const b = createHash("sha256").update(expected, "utf8").digest();
  return timingSafeEqual(a, b);
}

/** The credentials of `Authorization: Bearer <token>` (scheme case-insensitive, RFC 9110 §11.1), or null. */
export function bearerToken(header: string | undefined): string | null {
  if (header === undefined) return null;
  const m = /^[Bb][Ee][Aa][Rr][Ee][Rr] +(\S+) *$/.exec(header);
  return m === null ? null : m[1]!;
}

/**
 * Throws a 401 unless `req` may pass under `policy`. Decides from `req.routeOptions.url`, the pattern the
 * router matched (undefined for the not-found handler, which needs the key too, so unknown paths reveal
 * nothing to a client without one).
 */
export function checkAuth(req: FastifyRequest, policy: AuthPolicy): void {
  if (policy.apiKey === null) return;
  const route = req.routeOptions.url;
  if (route !== undefined && policy.open.has(route)) return;
  const header = req.headers.authorization;
  // Anthropic's clients send the key as `x-api-key`; either header may carry it (Authorization wins when both do).
  const xKey = req.headers["x-api-key"];
  if ((header === undefined || header === "") && typeof xKey === "string" && xKey !== "") {
    if (!sameSecret(xKey, policy.apiKey)) throw new ApiError(401, "invalid_api_key", "Incorrect API key provided");
    return;
  }
  if (header === undefined || header === "")
    throw new ApiError(401, "invalid_api_key", "Missing API key: send Authorization: Bearer <key> or x-api-key: <key>");
  const token = bearerToken(header);
  if (token === null || !sameSecret(token, policy.apiKey))
    throw new ApiError(401, "invalid_api_key", "Incorrect API key provided");
}

// Host checks against DNS rebinding: a page on evil.example that re-resolves its name to 127.0.0.1 can make the
// browser send requests to a loopback server, but they still say `Host: evil.example`. A server bound to loopback
// answers only requests addressed to loopback names unless told otherwise (`--allowed-hosts`).
import type { FastifyRequest } from "fastify";
import { ApiError } from "../errors.js";

/** Names a loopback-bound server answers to by default. */
export const LOOPBACK_NAMES: readonly string[] = ["localhost", "127.0.0.1", "::1"];

/** Whether `host` (a bind address) is a loopback address or name. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** The host name of a Host header value or URL authority (`[::1]:8080` -> `::1`, `Example.COM:80` -> `example.com`). */
export function hostName(authority: string): string {
  const a = authority.trim().toLowerCase();
  if (a.startsWith("[")) return a.slice(1, a.indexOf("]") < 0 ? undefined : a.indexOf("]"));
  const colon = a.indexOf(":");
  return colon < 0 ? a : a.slice(0, colon);
}

/**
 * Throws a 421 unless the request's Host header — and the authority of an absolute-form target, which RFC 9112
 * §3.2.2 says takes precedence — names an allowed host. `allowed` null = any host.
 */
export function checkHost(req: FastifyRequest, allowed: ReadonlySet<string> | null): void {
  if (allowed === null) return;
  const names: string[] = [];
  const header = req.headers.host;
  if (header !== undefined) names.push(hostName(header));
  const target = req.originalUrl;
  if (!target.startsWith("/") && target !== "*") {
    try {
      names.push(new URL(target).hostname.replace(/^\[|\]$/g, "").toLowerCase());
    } catch {
      // Not a URL: the router answers 404 for it.
    }
  }
  for (const n of names) {
    if (!allowed.has(n))
      throw new ApiError(
        421,
        "host_not_allowed",
        `this server does not answer for host '${n}' (allowed: ${[...allowed].join(", ")}); start it with --allowed-hosts to add names`,
      );
  }
}

// Request-target normalization before routing (fastify's rewriteUrl): the absolute-form
// (`GET http://host/v1/models`) becomes its path, and dot segments are resolved (`/v1/./models`,
// `/x/../v1/models`, also written `%2e`) with the WHATWG URL parser, so such targets reach the route they
// name. This is for clients, not security: authentication decides on the matched route (auth.ts).

/** The origin-form (path and query) of a request target; targets the URL parser refuses are kept as they are. */
export function normalizeTarget(raw: string): string {
  if (raw === "*") return raw;
  try {
    // Origin-form is resolved against a dummy origin, so `//v1` stays a path and does not become a host.
    const u = raw.startsWith("/") ? new URL(`http://h${raw}`) : new URL(raw);
    if (!raw.startsWith("/") && u.protocol !== "http:" && u.protocol !== "https:") return raw;
    return u.pathname + u.search;
  } catch {
    return raw;
  }
}

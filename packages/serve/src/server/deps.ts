// The server's own dependencies (fastify, its CORS plugin, prom-client), loaded on the first server made: every
// `poot` command imports this package, and importing them cost each `poot run` ~0.2 s (decision 1620).

import { createRequire } from "node:module";

const load = createRequire(import.meta.url);

/** fastify's factory. */
export const fastify = (): typeof import("fastify").default => (load("fastify") as typeof import("fastify")).default;

/** The `@fastify/cors` plugin. */
export const corsPlugin = (): typeof import("@fastify/cors").default =>
  (load("@fastify/cors") as typeof import("@fastify/cors")).default;

/** prom-client's metric classes. */
export const prom = (): typeof import("prom-client") => load("prom-client") as typeof import("prom-client");

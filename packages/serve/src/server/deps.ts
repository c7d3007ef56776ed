// The server's own dependencies (fastify, its CORS plugin, prom-client), loaded on the first server made, and ajv,
// loaded on the first schema compiled: every `poot` command imports this package, and importing them cost each
// `poot run` ~0.2 s (decision 1620), ajv another ~0.04 s (decision 1630).

import { createRequire } from "node:module";

const load = createRequire(import.meta.url);

/** fastify's factory. */
export const fastify = (): typeof import("fastify").default => (load("fastify") as typeof import("fastify")).default;

/** The `@fastify/cors` plugin. */
export const corsPlugin = (): typeof import("@fastify/cors").default =>
  (load("@fastify/cors") as typeof import("@fastify/cors")).default;

/** prom-client's metric classes. */
export const prom = (): typeof import("prom-client") => load("prom-client") as typeof import("prom-client");

/** ajv's validator class (JSON schemas of `--config` files and of `response_format`). */
export const ajv = (): typeof import("ajv").Ajv => (load("ajv") as typeof import("ajv")).Ajv;

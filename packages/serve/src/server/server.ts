// The OpenAI-compatible HTTP server on fastify: /v1/models, /v1/completions, /v1/chat/completions,
// /health and /metrics, with API-key checks, OpenAI-shaped errors and a continuous-batching scheduler.
import { randomUUID } from "node:crypto";
import Fastify, { type FastifyError, type FastifyInstance } from "fastify";
import { ApiError } from "../errors.js";
import { checkAuth, type AuthPolicy } from "./auth.js";
import type { ServeEngine } from "./engine.js";
import { createMetrics, type ServerMetrics } from "./metrics.js";
import { checkModel, planChat, planCompletion } from "./requests.js";
import { respond } from "./respond.js";
import { chatRenderer, completionRenderer } from "./responses.js";
import { Scheduler } from "./scheduler.js";
import { chatBody, completionBody, type ChatBody, type CompletionBody } from "./schemas.js";
import { normalizeTarget } from "./url.js";
import { toApiError } from "./validation.js";

/** Options of {@link createServer}. */
export interface ServerOptions {
  /** The engine that runs the model. */
  readonly engine: ServeEngine;
  /** The model id clients name in requests and /v1/models lists. */
  readonly modelId: string;
  /** When set, every route but `/health` (and `/metrics`, unless `metricsAuth`) needs `Authorization: Bearer <apiKey>`. */
  readonly apiKey?: string | null;
  /** `/metrics` needs the API key too (default false: scrapers usually send none). */
  readonly metricsAuth?: boolean;
  /** Most sequences in one decode step (default 8). */
  readonly maxBatch?: number;
  /** Most requests waiting for a batch slot before new ones get 429 (default 256). */
  readonly maxQueue?: number;
  /** Largest request body in bytes (default 1 MiB). */
  readonly bodyLimit?: number;
  /** Log requests to stdout through fastify's logger (default false). */
  readonly logger?: boolean;
}

/** A server ready to listen. */
export interface PootServer {
  /** The fastify instance (for `inject` in tests, or more routes). */
  readonly app: FastifyInstance;
  /** The scheduler (queue and batch state). */
  readonly scheduler: Scheduler;
  /** The metrics registry. */
  readonly metrics: ServerMetrics;
  /** Starts listening; resolves to the base URL, e.g. `http://127.0.0.1:8080`. */
  listen(options: { readonly host?: string; readonly port?: number }): Promise<string>;
  /**
   * Stops the server (the engine stays the caller's): new requests get 503 at once; queued and running
   * generations may finish for up to `drainMs` (default 0), then the rest are cancelled and the listener closes.
   */
  close(options?: { readonly drainMs?: number }): Promise<void>;
}

const ENDPOINTS = new Set(["/v1/models", "/v1/completions", "/v1/chat/completions", "/health", "/metrics"]);

/** Builds the server (routes, hooks, scheduler, metrics) over an engine. */
export function createServer(options: ServerOptions): PootServer {
  const { engine, modelId } = options;
  let scheduler: Scheduler | null = null;
  const metrics = createMetrics(engine, () => scheduler!);
  scheduler = new Scheduler(engine, { maxBatch: options.maxBatch ?? 8, maxQueue: options.maxQueue ?? 256, observer: metrics.observer });
  const sched = scheduler;
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: options.bodyLimit ?? 1 << 20,
    // Targets route as they read once normalized; auth checks the matched route, whatever the spelling.
    rewriteUrl: (req) => normalizeTarget(req.url ?? "/"),
    routerOptions: { ignoreDuplicateSlashes: true, caseSensitive: false },
    // close() has already ended every generation: drop keep-alive sockets rather than wait them out.
    forceCloseConnections: true,
    // Wrong types are errors, not coerced ("0.5" is not a temperature); defaults stay out of the body.
    ajv: { customOptions: { coerceTypes: false, useDefaults: false, removeAdditional: false, allErrors: false } },
  });
  const created = Math.floor(Date.now() / 1000);
  // JSON only: a text/plain body is a 415, not a string that fails the schema.
  app.removeContentTypeParser("text/plain");

  const auth: AuthPolicy = { apiKey: options.apiKey ?? null, open: new Set(options.metricsAuth === true ? ["/health"] : ["/health", "/metrics"]) };
  // onRequest runs after routing: checkAuth reads the matched route, so no spelling of a path skips it.
  app.addHook("onRequest", async (req) => checkAuth(req, auth));
  app.addHook("onResponse", async (req, reply) => {
    const url = req.routeOptions.url;
    metrics.request(url !== undefined && ENDPOINTS.has(url) ? url : "other", reply.statusCode);
  });
  app.setErrorHandler(async (err: FastifyError | ApiError | Error, req, reply) => {
    const api = toApiError(err);
    if (api.status >= 500) req.log.error(err);
    return reply.status(api.status).send(api.body());
  });
  app.setNotFoundHandler(async (req, reply) => {
    const api = new ApiError(404, "not_found", `no route ${req.method} ${req.url.split("?")[0]}`);
    return reply.status(404).send(api.body());
  });

  app.get("/health", async () => ({ status: "ok", model: modelId, active_sequences: sched.activeSequences, queue_depth: sched.queueDepth }));
  app.get("/metrics", async (_req, reply) => reply.header("content-type", metrics.registry.contentType).send(await metrics.registry.metrics()));
  app.get("/v1/models", async () => ({ object: "list", data: [{ id: modelId, object: "model", created, owned_by: "poot", max_model_len: engine.context }] }));
  app.get<{ Params: { id: string } }>("/v1/models/:id", async (req) => {
    checkModel(req.params.id, modelId);
    return { id: modelId, object: "model", created, owned_by: "poot", max_model_len: engine.context };
  });
  app.post<{ Body: CompletionBody }>("/v1/completions", { schema: { body: completionBody } }, async (req, reply) => {
    checkModel(req.body.model, modelId);
    const plan = planCompletion(engine, req.body);
    const header = { id: `cmpl-${randomUUID()}`, created: Math.floor(Date.now() / 1000), model: modelId };
    await respond(sched, plan, completionRenderer(engine, header, req.body.logprobs ?? null, plan.echo), reply);
  });
  app.post<{ Body: ChatBody }>("/v1/chat/completions", { schema: { body: chatBody } }, async (req, reply) => {
    checkModel(req.body.model, modelId);
    const plan = planChat(engine, req.body);
    const header = { id: `chatcmpl-${randomUUID()}`, created: Math.floor(Date.now() / 1000), model: modelId };
    await respond(sched, plan, chatRenderer(engine, header, plan.generations[0]!.logprobs), reply);
  });

  return {
    app,
    scheduler: sched,
    metrics,
    listen: async ({ host = "127.0.0.1", port = 8080 }) => {
      await app.listen({ host, port });
      const addr = app.server.address();
      const p = typeof addr === "object" && addr !== null ? addr.port : port;
      return `http://${host.includes(":") ? `[${host}]` : host}:${p}`;
    },
    close: async ({ drainMs = 0 } = {}) => {
      if (drainMs > 0) await sched.drain(drainMs);
      sched.shutdown();
      await app.close();
    },
  };
}

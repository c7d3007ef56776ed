// The OpenAI-compatible HTTP server on fastify: /v1/models, /v1/completions, /v1/chat/completions,
// /v1/embeddings, Anthropic's /v1/messages, llama-server's /tokenize and /detokenize, /health and /metrics, with
// API-key checks, OpenAI-shaped errors, a continuous-batching scheduler per model and several models on demand.
import * as http from "node:http";
import type { FastifyError, FastifyInstance } from "fastify";
import { ApiError, invariant } from "../errors.js";
import { corsPlugin, fastify } from "./deps.js";
import { checkAuth, type AuthPolicy } from "./auth.js";
import { LOOPBACK_NAMES, checkHost, isLoopback } from "./hosts.js";
import { isRemoteEngine, type BatchEngine, type RemoteServeEngine } from "./engine.js";
import { anthropicError } from "./messages-respond.js";
import { createMetrics, type MetricsCompat, type ServerMetrics } from "./metrics.js";
import { ModelPool, type LoadedEngine, type ServedModel } from "./model-pool.js";
import { poolScheduler } from "./pool-scheduler.js";
import { registerRoutes } from "./routes.js";
import { Scheduler } from "./scheduler.js";
import type { SchedulerOptions, ServeScheduler } from "./scheduler-api.js";
import { normalizeTarget } from "./url.js";
import { toApiError } from "./validation.js";

/** Options of {@link createServer}. */
export interface ServerOptions {
  /**
   * The engine that runs the one model (or give `models`): stepped here by an in-process Scheduler (a {@link BatchEngine}, e.g.
   * RuntimeServeEngine), or run on a worker thread with its own scheduler (a {@link RemoteServeEngine}, e.g.
   * EngineWorker, as `poot serve` does) so that no step holds the event loop.
   */
  readonly engine?: BatchEngine | RemoteServeEngine;
  /** The model id clients name in requests and /v1/models lists (with `engine`). */
  readonly modelId?: string;
  /**
   * Several models instead of `engine` (decision 2705): each loaded on its first request and unloaded
   * least-recently-used when a load needs room under `memoryBytes` (null or absent: no limit).
   */
  readonly models?: { readonly list: readonly ServedModel[]; readonly memoryBytes?: number | null };
  /**
   * When set, every route but `/health` (and `/metrics`, unless `metricsAuth`) needs `Authorization: Bearer <apiKey>`
   * or `x-api-key: <apiKey>` (as Anthropic's clients send it).
   */
  readonly apiKey?: string | null;
  /** `/metrics` needs the API key too (default false: scrapers usually send none). */
  readonly metricsAuth?: boolean;
  /** Also expose other servers' metric names on /metrics (`vllm:*`, `llamacpp:*`) for their dashboards. */
  readonly metricsCompat?: readonly MetricsCompat[];
  /** Most sequences in one decode step (default 8). */
  readonly maxBatch?: number;
  /** Most requests waiting for a batch slot before new ones get 429 (default 256). */
  readonly maxQueue?: number;
  /** Most milliseconds a request may wait in the queue before it gets a 503 (default 60 000; 0 = no limit). */
  readonly queueTimeoutMs?: number;
  /** Largest request body in bytes (default 1 MiB). */
  readonly bodyLimit?: number;
  /**
   * Host names requests may be addressed to (Host header, absolute-form target); others get 421. Default: the
   * loopback names when listening on a loopback address, else any host.
   */
  readonly allowedHosts?: readonly string[] | null;
  /** An origin (or `*`) browsers may call the API from (CORS); default none. */
  readonly cors?: string | null;
  /** Socket limits; see {@link SocketLimits}. */
  readonly limits?: Partial<SocketLimits>;
  /** Log requests to stdout through fastify's logger (default false). */
  readonly logger?: boolean;
}

/** Limits on client sockets, so slow or idle clients cannot hold the server's connections. */
export interface SocketLimits {
  /** Most ms to receive a request's headers (default 10 000). */
  readonly headersTimeoutMs: number;
  /** Most ms to receive a whole request, headers and body (default 30 000). Responses (streams) are not limited. */
  readonly requestTimeoutMs: number;
  /** Most ms an idle keep-alive socket stays open (default 5 000). */
  readonly keepAliveTimeoutMs: number;
  /** Most requests on one keep-alive socket (default 1000). */
  readonly maxRequestsPerSocket: number;
  /** Most open client sockets; more are closed at once (default 1024). */
  readonly maxConnections: number;
}

const DEFAULT_LIMITS: SocketLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxRequestsPerSocket: 1000,
  maxConnections: 1024,
};

/** A server ready to listen. */
export interface PootServer {
  /** The fastify instance (for `inject` in tests, or more routes). */
  readonly app: FastifyInstance;
  /** The scheduler (queue and batch state); with several models, their schedulers seen as one. */
  readonly scheduler: ServeScheduler;
  /** The served models: which are loaded, and leases on them. */
  readonly models: ModelPool;
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

const ENDPOINTS = new Set([
  "/v1/models",
  "/v1/completions",
  "/v1/chat/completions",
  "/v1/embeddings",
  "/v1/messages",
  "/v1/messages/count_tokens",
  "/tokenize",
  "/detokenize",
  "/health",
  "/metrics",
  "/admin/place",
]);

/** The models of a server: the one engine given, or the several models to load on demand. */
function servedModels(options: ServerOptions): { models: readonly ServedModel[]; memoryBytes: number | null } {
  if (options.models !== undefined) {
    invariant(options.engine === undefined, "createServer takes engine or models, not both");
    invariant(options.models.list.length > 0, "createServer needs at least one model");
    return { models: options.models.list, memoryBytes: options.models.memoryBytes ?? null };
  }
  invariant(options.engine !== undefined && options.modelId !== undefined, "createServer needs engine and modelId");
  const { engine } = options;
  const load = (): Promise<LoadedEngine> => Promise.reject(new Error("the single model is adopted, never loaded"));
  return { models: [{ id: options.modelId, bytes: 0, context: engine.context, load }], memoryBytes: null };
}

/** Builds the server (routes, hooks, schedulers, metrics) over one engine, or several models loaded on demand. */
export function createServer(options: ServerOptions): PootServer {
  const served = servedModels(options);
  let pool: ModelPool | null = null;
  const metrics = createMetrics(() => pool!.loaded, {
    modelIds: served.models.map((m) => m.id),
    ...(options.metricsCompat === undefined ? {} : { compat: options.metricsCompat }),
  });
  const queueTimeoutMs = options.queueTimeoutMs ?? 60_000;
  const maxQueue = options.maxQueue ?? 256;
  const schedulerOf = (model: ServedModel, engine: BatchEngine | RemoteServeEngine): ServeScheduler => {
    const schedulerOptions: SchedulerOptions = {
      maxBatch: model.maxBatch ?? options.maxBatch ?? 8,
      maxQueue,
      observer: metrics.observerFor(model.id),
      ...(queueTimeoutMs > 0 ? { queueTimeoutMs } : {}),
    };
    return isRemoteEngine(engine) ? engine.createScheduler(schedulerOptions) : new Scheduler(engine, schedulerOptions);
  };
  pool = new ModelPool({
    ...served,
    waitMs: queueTimeoutMs,
    scheduler: schedulerOf,
    observer: metrics.models,
  });
  if (options.engine !== undefined) pool.adopt(served.models[0]!.id, { engine: options.engine, free: async () => {} });
  const models = pool;
  // One model: its own scheduler, as before; several: their schedulers seen as one.
  const sched = options.engine !== undefined ? models.loaded[0]!.scheduler : poolScheduler(models);
  const limits: SocketLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const app = fastify()({
    logger: options.logger ?? false,
    // Node checks the header and request timeouts every connectionsCheckingInterval: keep it below them.
    serverFactory: (handler) => {
      const server = http.createServer(
        {
          headersTimeout: limits.headersTimeoutMs,
          requestTimeout: limits.requestTimeoutMs,
          keepAliveTimeout: limits.keepAliveTimeoutMs,
          connectionsCheckingInterval: Math.max(
            50,
            Math.min(1000, Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4)),
          ),
        },
        handler,
      );
      server.maxConnections = limits.maxConnections;
      server.maxRequestsPerSocket = limits.maxRequestsPerSocket;
      return server;
    },
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    maxRequestsPerSocket: limits.maxRequestsPerSocket,
    bodyLimit: options.bodyLimit ?? 1 << 20,
    // Targets route as they read once normalized; auth checks the matched route, whatever the spelling.
    rewriteUrl: (req) => normalizeTarget(req.url ?? "/"),
    routerOptions: { ignoreDuplicateSlashes: true, caseSensitive: false },
    // close() has already ended every generation: drop keep-alive sockets rather than wait them out.
    forceCloseConnections: true,
    // Wrong types are errors, not coerced ("0.5" is not a temperature); defaults stay out of the body.
    ajv: { customOptions: { coerceTypes: false, useDefaults: false, removeAdditional: false, allErrors: false } },
  });
  // JSON only: a text/plain body is a 415, not a string that fails the schema.
  app.removeContentTypeParser("text/plain");

  if (options.cors !== undefined && options.cors !== null) {
    // Preflights carry no credentials: the plugin answers them (its OPTIONS route is open, auth.ts).
    void app.register(corsPlugin(), {
      origin: options.cors,
      methods: ["GET", "POST"],
      allowedHeaders: ["authorization", "content-type", "x-api-key", "anthropic-version", "anthropic-beta"],
      maxAge: 600,
    });
  }
  // Set by listen() from the bound address when not given: loopback names for a loopback bind, else any.
  let allowedHosts: ReadonlySet<string> | null =
    options.allowedHosts === undefined || options.allowedHosts === null
      ? null
      : new Set(options.allowedHosts.map((h) => h.toLowerCase()));
  const open = [
    "/health",
    ...(options.metricsAuth === true ? [] : ["/metrics"]),
    ...(options.cors === undefined || options.cors === null ? [] : ["*"]),
  ];
  const auth: AuthPolicy = { apiKey: options.apiKey ?? null, open: new Set(open) };
  // onRequest runs after routing: checkAuth reads the matched route, so no spelling of a path skips it.
  app.addHook("onRequest", async (req) => {
    checkHost(req, allowedHosts);
    checkAuth(req, auth);
  });
  app.addHook("onResponse", async (req, reply) => {
    const url = req.routeOptions.url;
    metrics.request(url !== undefined && ENDPOINTS.has(url) ? url : "other", reply.statusCode);
  });
  app.setErrorHandler(async (err: FastifyError | ApiError | Error, req, reply) => {
    const api = toApiError(err);
    if (api.status >= 500) req.log.error(err);
    // Anthropic's clients read their own error shape on the Messages API's routes.
    const anthropic = req.routeOptions.url?.startsWith("/v1/messages") === true;
    return reply
      .status(api.status)
      .headers(api.headers)
      .send(anthropic ? anthropicError(api) : api.body());
  });
  app.setNotFoundHandler(async (req, reply) => {
    const api = new ApiError(404, "not_found", `no route ${req.method} ${req.url.split("?")[0]}`);
    return reply.status(404).send(api.body());
  });

  // A load balancer stops sending work when /health fails: so it fails (503) as soon as the server drains, or
  // when the engine (worker) has failed.
  app.get("/health", async (_req, reply) => {
    const refusing = sched.refusing;
    const body = {
      status: refusing ?? "ok",
      model: served.models[0]!.id,
      ...(served.models.length > 1
        ? {
            models: Object.fromEntries(served.models.map((m) => [m.id, models.isLoaded(m.id) ? "loaded" : "unloaded"])),
          }
        : {}),
      active_sequences: sched.activeSequences,
      queue_depth: sched.queueDepth,
    };
    return reply.status(refusing === null ? 200 : 503).send(body);
  });
  app.get("/metrics", async (_req, reply) =>
    reply.header("content-type", metrics.registry.contentType).send(await metrics.registry.metrics()),
  );
  registerRoutes(app, { pool: models, created: Math.floor(Date.now() / 1000), maxQueue });

  return {
    app,
    scheduler: sched,
    metrics,
    models,
    listen: async ({ host = "127.0.0.1", port = 8080 }) => {
      if (options.allowedHosts === undefined && isLoopback(host)) allowedHosts = new Set(LOOPBACK_NAMES);
      await app.listen({ host, port });
      const addr = app.server.address();
      const p = typeof addr === "object" && addr !== null ? addr.port : port;
      return `http://${host.includes(":") ? `[${host}]` : host}:${p}`;
    },
    close: async ({ drainMs = 0 } = {}) => {
      if (drainMs > 0) await sched.drain(drainMs);
      sched.shutdown();
      await app.close();
      await models.close();
    },
  };
}

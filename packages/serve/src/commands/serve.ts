// `poot serve MODEL`: the OpenAI-compatible HTTP server with /metrics over the runtime, bound to
// 127.0.0.1 unless told otherwise; runs until SIGINT or SIGTERM, then drains and exits.
import * as net from "node:net";
import type { CliIo, CommandModule, ExecutorFactory } from "../command.js";
import { CliError } from "../errors.js";
import type { MetricsCompat } from "../server/metrics.js";
import type { ServedModel } from "../server/model-pool.js";
import { createServer, type PootServer } from "../server/server.js";
import { placementOptions, type PlacementFlags } from "../placement.js";
import { activationsOption, numericsOption, parseNumerics } from "./activations.js";
import { parseNumber } from "./numbers.js";
import { loadModel, logPlacement, type ExecutorModule, type LoadContext, type Loaded } from "./serve-load.js";
import { formatBytes, modelEntries, type ModelEntry, type RawModelOptions } from "./serve-models.js";

export type { ExecutorModule } from "./serve-load.js";

/** `poot serve` options as commander parses them (all strings). */
export interface ServeCliOptions extends PlacementFlags {
  readonly backend: string;
  /** `--numerics`: the CPU backend's exact or fast numerics (decision 2320). */
  readonly numerics?: string;
  readonly host: string;
  readonly port: string;
  readonly apiKey?: string;
  readonly metricsAuth?: boolean;
  readonly metricsCompat?: string;
  readonly prefixCache?: boolean;
  readonly maxBatch: string;
  readonly maxQueue: string;
  readonly ctx?: string;
  readonly pageSize?: string;
  readonly kvPages?: string;
  readonly weights: string;
  /** `--activations`: FP8 checkpoints' activation numerics (f32, fp8-static or fp8-dynamic). */
  readonly activations?: string;
  readonly chatTemplate?: string;
  readonly modelName?: string;
  /** `--config FILE`: the models to serve and their own options (JSON; see {@link ServeConfig}). */
  readonly config?: string;
  /** `--models-memory SIZE`: most weight bytes of loaded models at once. */
  readonly modelsMemory?: string;
  readonly prepare: boolean;
  readonly drainSeconds?: string;
  readonly queueTimeout?: string;
  readonly allowedHosts?: string;
  readonly cors?: string;
  readonly maxConnections?: string;
  /** false (`--no-engine-worker`): step the engine on the HTTP thread even when an executor module is given. */
  readonly engineWorker?: boolean;
  /** The engine worker's nice value (0-19, Linux). */
  readonly engineNice?: string;
}

/** A started server: its URL and how to stop it (also frees the engine and executor). */
export interface StartedServer {
  /** The base URL, e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  /** The running server. */
  readonly server: PootServer;
  /** Stops it, letting running generations finish for up to `drainMs`, then frees the engine and executor. */
  close(options?: { readonly drainMs?: number }): Promise<void>;
}

const command = "serve";

function positive(flag: string, value: string, min: number): number {
  const n = parseNumber(flag, value, "int", command);
  if (n < min) throw new CliError("bad-input", `${flag} must be an integer >= ${min}, got ${n}`, { command });
  return n;
}

/** `poot serve`'s flag values, checked (each bad one a one-line CliError naming the flag). */
function serveFlags(o: ServeCliOptions) {
  const port = parseNumber("--port", o.port, "int", command);
  if (port < 0 || port > 65535)
    throw new CliError("bad-input", `--port must be in [0, 65535], got ${port}`, { command });
  const maxBatch = positive("--max-batch", o.maxBatch, 1);
  const maxQueue = positive("--max-queue", o.maxQueue, 0);
  const queueTimeout = parseNumber("--queue-timeout", o.queueTimeout ?? "60", "float", command);
  if (!(queueTimeout >= 0))
    throw new CliError("bad-input", `--queue-timeout must be >= 0 seconds, got ${o.queueTimeout}`, { command });
  const maxConnections =
    o.maxConnections === undefined ? undefined : positive("--max-connections", o.maxConnections, 1);
  const nice = parseNumber("--engine-nice", o.engineNice ?? "5", "int", command);
  if (nice < 0 || nice > 19)
    throw new CliError("bad-input", `--engine-nice must be an integer in [0, 19], got ${nice}`, { command });
  // "*" lifts the Host check; a list replaces the loopback default.
  const allowedHosts =
    o.allowedHosts === undefined
      ? undefined
      : o.allowedHosts.trim() === "*"
        ? null
        : o.allowedHosts
            .split(",")
            .map((h) => h.trim())
            .filter((h) => h !== "");
  const metricsCompat = (o.metricsCompat ?? "")
    .split(",")
    .map((x) => x.trim())
    .filter((x) => x !== "");
  for (const m of metricsCompat)
    if (m !== "vllm" && m !== "llamacpp")
      throw new CliError("bad-input", `--metrics-compat takes vllm and/or llamacpp (comma-separated), got "${m}"`, {
        command,
      });
  return { port, maxBatch, maxQueue, queueTimeout, maxConnections, nice, allowedHosts, metricsCompat };
}

/**
 * Checks `poot serve`'s flag values without loading anything: the CLI calls it before `--backend auto` probes the
 * backends, so a bad value fails at once.
 */
export function checkServeFlags(o: ServeCliOptions): void {
  serveFlags(o);
  drainMsOf(o);
  parseNumerics(o.numerics, command);
  const sizes = [
    ["--ctx", o.ctx, 2],
    ["--page-size", o.pageSize, 1],
    ["--kv-pages", o.kvPages, 1],
  ] as const;
  for (const [flag, v, min] of sizes) if (v !== undefined) positive(flag, v, min);
}

/** `--drain-seconds` in milliseconds. */
function drainMsOf(o: ServeCliOptions): number {
  const drainMs = parseNumber("--drain-seconds", o.drainSeconds ?? "30", "float", command) * 1000;
  if (!(drainMs >= 0))
    throw new CliError("bad-input", `--drain-seconds must be >= 0, got ${o.drainSeconds}`, { command });
  return drainMs;
}

/**
 * Builds the server from `poot serve`'s options and starts listening. One MODEL (a string, or a one-element list
 * without `--config`) is loaded first, as before; several (or a `--config` file) are loaded on their first request
 * and unloaded least-recently-used under `--models-memory` (decision 2705). With `executorModule` (as `poot serve`
 * runs) each engine, its scheduler and its loading run on a worker thread that makes its executors through that
 * module, so neither loads nor steps hold the HTTP event loop; without it they run on this thread with
 * `createExecutor`'s executors (for embedding and tests).
 */
export async function startServe(
  model: string | readonly string[],
  o: ServeCliOptions,
  io: CliIo,
  createExecutor: ExecutorFactory,
  backends: readonly string[] = [o.backend],
  executorModule?: ExecutorModule,
): Promise<StartedServer> {
  const { port, maxBatch, maxQueue, queueTimeout, maxConnections, nice, allowedHosts, metricsCompat } = serveFlags(o);
  const defaults: RawModelOptions = {
    backend: o.backend,
    weights: o.weights,
    ...(o.activations === undefined ? {} : { activations: o.activations }),
    maxBatch,
    prefixCache: o.prefixCache === true,
    ...(o.ctx === undefined ? {} : { ctx: positive("--ctx", o.ctx, 2) }),
    ...(o.pageSize === undefined ? {} : { pageSize: positive("--page-size", o.pageSize, 1) }),
    ...(o.kvPages === undefined ? {} : { kvPages: positive("--kv-pages", o.kvPages, 1) }),
    ...(o.chatTemplate === undefined ? {} : { chatTemplate: o.chatTemplate }),
  };
  const { entries, memoryBytes } = modelEntries(typeof model === "string" ? [model] : model, o, defaults);
  const ctx: LoadContext = {
    o,
    io,
    createExecutor,
    backends,
    ...(executorModule === undefined || o.engineWorker === false ? {} : { executorModule }),
    nice,
  };
  const serverOptions = {
    apiKey: o.apiKey ?? null,
    metricsAuth: o.metricsAuth === true,
    metricsCompat: metricsCompat as MetricsCompat[],
    maxBatch,
    maxQueue,
    queueTimeoutMs: queueTimeout * 1000,
    ...(allowedHosts === undefined ? {} : { allowedHosts }),
    ...(o.cors === undefined ? {} : { cors: o.cors }),
    ...(maxConnections === undefined ? {} : { limits: { maxConnections } }),
  };
  const auth = o.apiKey === undefined ? "" : " (API key required)";
  if (entries.length === 1 && o.config === undefined) {
    // One model: loaded before listening, as always; but a taken port fails before a load of minutes, not after.
    const e = entries[0]!;
    await checkBindable(o.host, port);
    const loaded = await loadModel(e.path, e.settings, ctx);
    const server = createServer({ ...serverOptions, engine: loaded.serveEngine, modelId: e.id });
    const url = await listen(server, o.host, port, loaded.free);
    logPlacement(loaded, io);
    io.err(
      `poot serve: ${e.id} (context ${loaded.serveEngine.context}, max batch ${maxBatch}, backend ${e.settings.backend}) on ${url}${auth}\n`,
    );
    return {
      url,
      server,
      close: async (options = {}) => {
        await server.close(options);
        await loaded.free();
      },
    };
  }
  const server = createServer({
    ...serverOptions,
    models: { list: entries.map((e) => servedOf(e, ctx)), memoryBytes },
  });
  const url = await listen(server, o.host, port, async () => {});
  const budget = memoryBytes === null ? "no memory budget" : `--models-memory ${formatBytes(memoryBytes)}`;
  io.err(
    `poot serve: ${entries.length} models (${entries.map((e) => `${e.id} ${formatBytes(e.bytes)}`).join(", ")}; each loaded on its first request, ${budget}) on ${url}${auth}\n`,
  );
  // The server unloads the models it loaded when it closes.
  return { url, server, close: (options = {}) => server.close(options) };
}

/** Fails in one line, as {@link listen} would, when `host:port` (not 0) cannot be bound now. */
async function checkBindable(host: string, port: number): Promise<void> {
  if (port === 0) return;
  try {
    await new Promise<void>((resolve, reject) => {
      const probe = net.createServer();
      probe.once("error", reject);
      probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
    });
  } catch (err) {
    throw new CliError("command-failed", `cannot listen on ${host}:${port}: ${(err as Error).message}`, { command });
  }
}

/** Starts listening; frees what was loaded and fails in one line when the address cannot be bound. */
async function listen(server: PootServer, host: string, port: number, free: () => Promise<void>): Promise<string> {
  try {
    return await server.listen({ host, port });
  } catch (err) {
    await server.close();
    await free();
    throw new CliError("command-failed", `cannot listen on ${host}:${port}: ${(err as Error).message}`, { command });
  }
}

/** A model entry as the server's pool loads it (logging each load and unload). */
function servedOf(e: ModelEntry, ctx: LoadContext): ServedModel {
  const { context } = e.settings.load;
  return {
    id: e.id,
    aliases: e.aliases,
    bytes: e.bytes,
    maxBatch: e.maxBatch,
    ...(context === undefined ? {} : { context }),
    load: async () => {
      const t0 = performance.now();
      let loaded: Loaded;
      try {
        loaded = await loadModel(e.path, e.settings, ctx);
      } catch (err) {
        ctx.io.err(`poot serve: ${e.id}: ${(err as Error).message}\n`);
        throw err;
      }
      logPlacement(loaded, ctx.io);
      ctx.io.err(`poot serve: loaded ${e.id} in ${((performance.now() - t0) / 1000).toFixed(2)} s\n`);
      return {
        engine: loaded.serveEngine,
        free: async () => {
          await loaded.free();
          ctx.io.err(`poot serve: unloaded ${e.id}\n`);
        },
      };
    },
  };
}

/**
 * The `serve` subcommand, running on the executors `createExecutor` makes (the CLI passes its backend table), or,
 * given `executorModule` (as the CLI does), on an engine worker thread that makes them through that module.
 * `demoModel` finds the model served when no MODEL and no `--config` are given (the CLI's bundled demo model).
 */
export const serveCommand = (
  createExecutor: ExecutorFactory,
  backends?: readonly string[],
  executorModule?: ExecutorModule,
  demoModel?: () => string | null,
): CommandModule => ({
  name: "serve",
  checkFlags: (options) => checkServeFlags(options as unknown as ServeCliOptions),
  register: (program, io) => {
    placementOptions(program.command("serve"))
      .description(
        "serve MODEL (or several, each loaded on its first request) over an OpenAI-compatible HTTP API with Prometheus /metrics",
      )
      .argument(
        "[models...]",
        "Hugging Face model folders or .gguf files; requests pick one by its id (`model`) (default, without --config: the bundled demo model)",
      )
      .option(
        "--config <file>",
        "a JSON file listing the models to serve with their own ids, aliases and options (instead of MODEL arguments)",
      )
      .option(
        "--models-memory <size>",
        "most weight bytes of loaded models at once, e.g. 24G; the least recently used idle model is unloaded to load another",
      )
      .option("--backend <name>", "where to run (`poot backends` lists them; auto: the first GPU, else cpu)", "auto")
      .option("--host <host>", "address to bind (use 0.0.0.0 to accept other machines)", "127.0.0.1")
      .option("--port <n>", "port (0 = any free port)", "8080")
      .option(
        "--api-key <key>",
        "require Authorization: Bearer KEY on every route but /health and /metrics (default: $POOT_API_KEY, else none)",
      )
      .option("--metrics-auth", "/metrics needs the API key too")
      .option(
        "--metrics-compat <names>",
        "also expose vLLM's (vllm:*) and/or llama.cpp's (llamacpp:*) metric names on /metrics: vllm, llamacpp or both",
      )
      .option(
        "--allowed-hosts <names>",
        "comma-separated Host names to answer (421 otherwise; * = any); default: loopback names when bound to loopback",
      )
      .option("--cors <origin>", "let browsers on ORIGIN (or *) call the API")
      .option("--max-connections <n>", "most open client sockets", "1024")
      .option(
        "--prefix-cache",
        "keep finished prompts' KV pages in a prefix cache so prompts sharing a prefix skip computing it (LRU-evicted)",
      )
      .option("--max-batch <n>", "most sequences in one decode step", "8")
      .option("--max-queue <n>", "most requests waiting for a batch slot; more get 429", "256")
      .option("--queue-timeout <s>", "a request waiting longer than S seconds for a slot gets 503 (0 = no limit)", "60")
      .option("--ctx <n>", "KV capacity per sequence in tokens (default: the model's, at most 2048)")
      .option("--page-size <n>", "tokens per KV cache page, a power of two", "16")
      .option(
        "--kv-pages <n>",
        "pages in the shared KV cache (default: --max-batch full contexts); a request waits until its pages are free",
      )
      .option("--weights <kind>", "HF folders: f32 (model.safetensors) or bf16 (model.bf16.safetensors)", "f32")
      .addOption(activationsOption())
      .option("--chat-template <file>", "a Jinja chat template replacing the model's own")
      .option(
        "--model-name <name>",
        "the model id clients use (default: the model folder or file name); one MODEL only",
      )
      .option("--no-prepare", "compile programs on first use instead of at start-up")
      .option(
        "--no-engine-worker",
        "step the engine on the HTTP thread instead of a worker thread (each step then delays /health and streams)",
      )
      .option(
        "--engine-nice <n>",
        "nice value (0-19) of the engine worker and its CPU kernel threads (Linux), so the HTTP thread runs first",
        "5",
      )
      .addOption(numericsOption())
      .option(
        "--drain-seconds <s>",
        "on SIGINT/SIGTERM, let running requests finish for up to S seconds (a second signal stops at once)",
        "30",
      )
      .action(async (models: string[], o: ServeCliOptions) => {
        // Only the CLI reads the environment; the server library takes typed options.
        const apiKey = o.apiKey ?? process.env.POOT_API_KEY;
        checkServeFlags(o);
        const drainMs = drainMsOf(o);
        // The CPU executors read it (decision 2320), in the engine worker too: the environment reaches it.
        if (o.numerics !== undefined) process.env["POOT_CPU_NUMERICS"] = o.numerics;
        // No MODEL and no --config: the bundled demo model, as `poot run` and `poot chat` do. It is served as
        // `demo` (unless --model-name says otherwise) wherever its folder is (an npm install names it `model`).
        const demo = models.length === 0 && o.config === undefined ? (demoModel?.() ?? null) : null;
        const started = await startServe(
          demo === null ? models : [demo],
          {
            ...o,
            ...(demo === null ? {} : { modelName: o.modelName ?? "demo" }),
            ...(apiKey === undefined || apiKey === "" ? {} : { apiKey }),
          },
          io,
          createExecutor,
          backends,
          executorModule,
        );
        const signal = (): Promise<void> =>
          new Promise<void>((resolve) => {
            const stop = (): void => {
              process.off("SIGINT", stop);
              process.off("SIGTERM", stop);
              resolve();
            };
            process.on("SIGINT", stop);
            process.on("SIGTERM", stop);
          });
        await signal();
        io.err(
          `poot serve: shutting down (finishing running requests for up to ${drainMs / 1000} s; signal again to stop now)\n`,
        );
        await Promise.race([started.server.scheduler.drain(drainMs), signal()]);
        await started.close();
      });
  },
});

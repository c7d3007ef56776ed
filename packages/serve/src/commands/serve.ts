// `poot serve MODEL`: the OpenAI-compatible HTTP server with /metrics over the runtime, bound to
// 127.0.0.1 unless told otherwise; runs until SIGINT or SIGTERM, then drains and exits.
import * as fs from "node:fs";
import * as path from "node:path";
import { ModelError } from "@poot/models";
import { Engine, RuntimeError, type PlacementReport } from "@poot/runtime";
import { CliError } from "../errors.js";
import { EngineWorker, EngineWorkerError, type EngineWorkerLoad } from "../server/engine-worker.js";
import { RuntimeServeEngine } from "../server/runtime-engine.js";
import type { MetricsCompat } from "../server/metrics.js";
import { createServer, type PootServer } from "../server/server.js";
import { planDevices, describePlacement, engineDevices, placementOptions, type PlacementFlags } from "../placement.js";
import type { CliIo, CommandModule, ExecutorFactory } from "../command.js";
import { parseNumber } from "./numbers.js";

/** `poot serve` options as commander parses them (all strings). */
export interface ServeCliOptions extends PlacementFlags {
  readonly backend: string;
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
  readonly chatTemplate?: string;
  readonly modelName?: string;
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

/**
 * Where `poot serve`'s engine worker gets its executors: a module (URL) whose export `name` (default
 * `executorFactory`) takes the device names and the command and returns (or resolves to) an ExecutorFactory.
 * The CLI passes its own (dist/serve-executors.js); functions cannot cross into the worker thread, modules can.
 */
export interface ExecutorModule {
  /** The module's URL (a file: URL of a built .js file). */
  readonly url: URL | string;
  /** The export to call (default `executorFactory`). */
  readonly name?: string;
}

/** A loading failure of the engine worker as the CliError the in-process load would have thrown. */
function workerCliError(err: EngineWorkerError, model: string): CliError {
  if (err.kind === "cli")
    return new CliError((err.code ?? "bad-input") as CliError["code"], err.message, {
      command,
      ...(err.file === undefined ? {} : { file: err.file }),
    });
  if (err.kind === "model")
    return new CliError(err.code === "io" ? "file-unreadable" : "bad-input", err.message, {
      command,
      file: err.file ?? model,
    });
  if (err.kind === "runtime" || err.code === "no-tokenizer")
    return new CliError("bad-input", err.message, { command, file: model });
  return new CliError("command-failed", err.message, { command, file: model });
}

function positive(flag: string, value: string, min: number): number {
  const n = parseNumber(flag, value, "int", command);
  if (n < min) throw new CliError("bad-input", `${flag} must be an integer >= ${min}, got ${n}`, { command });
  return n;
}

/**
 * Loads MODEL, builds the engine and server from `poot serve`'s options, and starts listening. With
 * `executorModule` (as `poot serve` runs) the engine and its scheduler run on a worker thread that makes its
 * executors through that module, so no engine step holds the HTTP event loop; without it they run on this thread
 * with `createExecutor`'s executors (for embedding and tests).
 */
export async function startServe(
  model: string,
  o: ServeCliOptions,
  io: CliIo,
  createExecutor: ExecutorFactory,
  backends: readonly string[] = [o.backend],
  executorModule?: ExecutorModule,
): Promise<StartedServer> {
  const port = parseNumber("--port", o.port, "int", command);
  if (port < 0 || port > 65535)
    throw new CliError("bad-input", `--port must be in [0, 65535], got ${port}`, { command });
  const maxBatch = positive("--max-batch", o.maxBatch, 1);
  const maxQueue = positive("--max-queue", o.maxQueue, 0);
  const context = o.ctx === undefined ? undefined : positive("--ctx", o.ctx, 2);
  const pageSize = o.pageSize === undefined ? undefined : positive("--page-size", o.pageSize, 1);
  if (pageSize !== undefined && (pageSize & (pageSize - 1)) !== 0)
    throw new CliError("bad-input", `--page-size must be a power of two, got ${pageSize}`, { command });
  const kvPages = o.kvPages === undefined ? undefined : positive("--kv-pages", o.kvPages, 1);
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
  if (o.weights !== "f32" && o.weights !== "bf16")
    throw new CliError("bad-input", `--weights must be f32 or bf16, got "${o.weights}"`, { command });
  let chatTemplate: string | undefined;
  if (o.chatTemplate !== undefined) {
    try {
      chatTemplate = fs.readFileSync(o.chatTemplate, "utf8");
    } catch (err) {
      throw new CliError("file-unreadable", `cannot read ${o.chatTemplate}: ${(err as Error).message}`, {
        command,
        file: o.chatTemplate,
      });
    }
  }
  // Prefill chunks stay within the context (the runtime stages one program per power-of-two chunk).
  const prefillChunk = context === undefined ? undefined : 2 ** Math.min(6, Math.floor(Math.log2(context)));
  // The KV pool holds --max-batch full contexts unless --kv-pages says otherwise; requests beyond it wait.
  const load = {
    weights: o.weights,
    maxSequences: maxBatch,
    prefixCache: o.prefixCache === true,
    ...(context === undefined ? {} : { context, prefillChunk }),
    ...(pageSize === undefined ? {} : { pageSize }),
    ...(kvPages === undefined ? {} : { kvPages }),
  } as const;
  const loaded =
    executorModule === undefined || o.engineWorker === false
      ? loadInProcess(model, o, io, createExecutor, backends, load, chatTemplate)
      : await loadInWorker(model, o, io, executorModule, backends, load, chatTemplate, nice);
  const { serveEngine, free } = loaded;
  const modelId = o.modelName ?? path.basename(path.resolve(model));
  const server = createServer({
    engine: serveEngine,
    modelId,
    apiKey: o.apiKey ?? null,
    metricsAuth: o.metricsAuth === true,
    metricsCompat: metricsCompat as MetricsCompat[],
    maxBatch,
    maxQueue,
    queueTimeoutMs: queueTimeout * 1000,
    ...(allowedHosts === undefined ? {} : { allowedHosts }),
    ...(o.cors === undefined ? {} : { cors: o.cors }),
    ...(maxConnections === undefined ? {} : { limits: { maxConnections } }),
  });
  let url: string;
  try {
    url = await server.listen({ host: o.host, port });
  } catch (err) {
    await free();
    throw new CliError("command-failed", `cannot listen on ${o.host}:${port}: ${(err as Error).message}`, { command });
  }
  const report = loaded.placementReport;
  if (report !== null)
    io.err(
      `${describePlacement(report)
        .map((l) => `poot serve: ${l}`)
        .join("\n")}\n`,
    );
  io.err(
    `poot serve: ${modelId} (context ${serveEngine.context}, max batch ${maxBatch}, backend ${o.backend}) on ${url}${o.apiKey === undefined ? "" : " (API key required)"}\n`,
  );
  return {
    url,
    server,
    close: async (options = {}) => {
      await server.close(options);
      await free();
    },
  };
}

/** The engine options `poot serve` loads the model with (less the executors). */
type LoadOptions = EngineWorkerLoad & { readonly weights: "f32" | "bf16"; readonly maxSequences: number };

/** A loaded engine for the server, what `poot serve` prints of its placement, and how to free it all. */
interface Loaded {
  readonly serveEngine: RuntimeServeEngine | EngineWorker;
  readonly placementReport: (PlacementReport & { readonly chosen?: string }) | null;
  free(): Promise<void>;
}

/** The engine on this thread (embedding and tests): steps run on the event loop. */
function loadInProcess(
  model: string,
  o: ServeCliOptions,
  io: CliIo,
  createExecutor: ExecutorFactory,
  backends: readonly string[],
  load: LoadOptions,
  chatTemplate: string | undefined,
): Loaded {
  const { plan, placed } = planDevices(o, o.backend, model, load.weights, command, backends, createExecutor);
  const executor = { dispose: () => placed.dispose() };
  let engine: Engine;
  try {
    engine = Engine.load(model, {
      executor: placed.executor,
      ...engineDevices(plan, placed, createExecutor),
      ...load,
    });
  } catch (err) {
    executor.dispose();
    if (err instanceof ModelError)
      throw new CliError(err.code === "io" ? "file-unreadable" : "bad-input", err.message, {
        command,
        file: err.file ?? model,
      });
    if (err instanceof RuntimeError) throw new CliError("bad-input", err.message, { command, file: model });
    throw err;
  }
  if (engine.tokenizer === null) {
    engine.close();
    executor.dispose();
    throw new CliError("bad-input", `${model} has no tokenizer (tokenizer.json): the server needs one`, {
      command,
      file: model,
    });
  }
  const serveEngine = new RuntimeServeEngine(engine, {
    tokenizerSource: model,
    ...(chatTemplate === undefined ? {} : { chatTemplate }),
  });
  if (o.prepare) {
    const t0 = performance.now();
    engine.prepare();
    io.err(
      `poot serve: compiled ${engine.stats.programsStaged} programs in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
    );
  }
  const report = engine.placementReport();
  return {
    serveEngine,
    placementReport:
      report === null ? null : { ...report, ...(plan?.chosen === undefined ? {} : { chosen: plan.chosen }) },
    free: async () => {
      serveEngine.close();
      executor.dispose();
    },
  };
}

/** The engine and its scheduler on a worker thread (`poot serve`): steps never hold the event loop. */
async function loadInWorker(
  model: string,
  o: ServeCliOptions,
  io: CliIo,
  executors: ExecutorModule,
  backends: readonly string[],
  load: LoadOptions,
  chatTemplate: string | undefined,
  nice: number,
): Promise<Loaded> {
  let worker: EngineWorker;
  try {
    worker = await EngineWorker.start({
      model,
      executorModule: executors.url,
      ...(executors.name === undefined ? {} : { executorExport: executors.name }),
      backend: o.backend,
      command,
      // Planned in the worker, whose executor answers the default placement's memory query (decision 1705).
      placement: {
        ...(o.gpuLayers === undefined ? {} : { gpuLayers: o.gpuLayers }),
        ...(o.place === undefined ? {} : { place: o.place }),
        ...(o.deviceMemory === undefined ? {} : { deviceMemory: o.deviceMemory }),
        ...(o.hostMemory === undefined ? {} : { hostMemory: o.hostMemory }),
        ...(o.prefetch === undefined ? {} : { prefetch: o.prefetch }),
        ...(o.tp === undefined ? {} : { tp: o.tp }),
      },
      backends,
      load,
      ...(chatTemplate === undefined ? {} : { chatTemplate }),
      prepare: o.prepare,
      nice,
      log: (line) => io.err(`${line}\n`),
    });
  } catch (err) {
    if (err instanceof EngineWorkerError) throw workerCliError(err, model);
    throw err;
  }
  const p = worker.info.prepared;
  if (p !== null)
    io.err(`poot serve: compiled ${p.programs} programs in ${p.seconds.toFixed(1)} s (engine worker thread)\n`);
  return {
    serveEngine: worker,
    placementReport: worker.info.placementReport,
    free: async () => {
      worker.close();
      await worker.exited;
    },
  };
}

/**
 * The `serve` subcommand, running on the executors `createExecutor` makes (the CLI passes its backend table), or,
 * given `executorModule` (as the CLI does), on an engine worker thread that makes them through that module.
 */
export const serveCommand = (
  createExecutor: ExecutorFactory,
  backends?: readonly string[],
  executorModule?: ExecutorModule,
): CommandModule => ({
  name: "serve",
  register: (program, io) => {
    placementOptions(program.command("serve"))
      .description("serve MODEL over an OpenAI-compatible HTTP API with Prometheus /metrics")
      .argument("<model>", "a Hugging Face model folder or a .gguf file")
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
      .option("--chat-template <file>", "a Jinja chat template replacing the model's own")
      .option("--model-name <name>", "the model id clients use (default: the model folder or file name)")
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
      .option(
        "--drain-seconds <s>",
        "on SIGINT/SIGTERM, let running requests finish for up to S seconds (a second signal stops at once)",
        "30",
      )
      .action(async (model: string, o: ServeCliOptions) => {
        // Only the CLI reads the environment; the server library takes typed options.
        const apiKey = o.apiKey ?? process.env.POOT_API_KEY;
        const drainMs = parseNumber("--drain-seconds", o.drainSeconds ?? "30", "float", command) * 1000;
        if (!(drainMs >= 0))
          throw new CliError("bad-input", `--drain-seconds must be >= 0, got ${o.drainSeconds}`, { command });
        const started = await startServe(
          model,
          { ...o, ...(apiKey === undefined || apiKey === "" ? {} : { apiKey }) },
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

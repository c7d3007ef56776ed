// Loading one model for `poot serve`: on an engine worker thread (decision 2004; the load and every step run off
// the HTTP event loop) or, for embedding and tests, on this thread; failures as one-line CliErrors.
import { ModelError } from "@poot/models";
import { Engine, RuntimeError, type PlacementReport } from "@poot/runtime";
import type { CliIo, ExecutorFactory } from "../command.js";
import { CliError } from "../errors.js";
import { EngineWorker, EngineWorkerError, type EngineWorkerLoad } from "../server/engine-worker.js";
import { RuntimeServeEngine } from "../server/runtime-engine.js";
import { describePlacement, engineDevices, planDevices, type PlacementFlags } from "../placement.js";

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

/** Prints the placement of a loaded model, if it has one. */
export function logPlacement(loaded: Loaded, io: CliIo): void {
  const report = loaded.placementReport;
  if (report !== null)
    io.err(
      `${describePlacement(report)
        .map((l) => `poot serve: ${l}`)
        .join("\n")}\n`,
    );
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

/** The engine options `poot serve` loads a model with (less the executors). */
export type LoadOptions = EngineWorkerLoad & { readonly weights: "f32" | "bf16"; readonly maxSequences: number };

/** One model's own options, checked: where it runs, its engine options and its chat template's text. */
export interface ModelSettings {
  /** `--backend`. */
  readonly backend: string;
  /** The engine options. */
  readonly load: LoadOptions;
  /** The chat template's text (`--chat-template`), when one replaces the model's own. */
  readonly chatTemplate?: string;
}

/** What every model's load shares: the placement flags, where to log, how to make executors, the engine worker. */
export interface LoadContext {
  /** The placement flags and `--no-prepare`. */
  readonly o: PlacementFlags & { readonly prepare: boolean };
  /** Where to log. */
  readonly io: CliIo;
  /** Executors on this thread (no engine worker). */
  readonly createExecutor: ExecutorFactory;
  /** The backend names `auto` chooses among. */
  readonly backends: readonly string[];
  /** The engine worker's executor module; absent: the engine runs on this thread. */
  readonly executorModule?: ExecutorModule;
  /** The engine worker's nice value. */
  readonly nice: number;
}

/** Loads `model` with `s` on an engine worker thread when the context has an executor module, else on this one. */
export function loadModel(model: string, s: ModelSettings, ctx: LoadContext): Promise<Loaded> {
  return ctx.executorModule === undefined
    ? Promise.resolve(loadInProcess(model, s, ctx))
    : loadInWorker(model, s, ctx, ctx.executorModule);
}

/** A loaded engine for the server, what `poot serve` prints of its placement, and how to free it all. */
export interface Loaded {
  readonly serveEngine: RuntimeServeEngine | EngineWorker;
  readonly placementReport: (PlacementReport & { readonly chosen?: string }) | null;
  free(): Promise<void>;
}

/** The engine on this thread (embedding and tests): steps run on the event loop. */
function loadInProcess(model: string, s: ModelSettings, ctx: LoadContext): Loaded {
  const { o, io, createExecutor, backends } = ctx;
  const { load, chatTemplate } = s;
  const { plan, placed } = planDevices(o, s.backend, model, load.weights, command, backends, createExecutor);
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
  s: ModelSettings,
  ctx: LoadContext,
  executors: ExecutorModule,
): Promise<Loaded> {
  const { o, io, backends, nice } = ctx;
  const { load, chatTemplate } = s;
  let worker: EngineWorker;
  try {
    worker = await EngineWorker.start({
      model,
      executorModule: executors.url,
      ...(executors.name === undefined ? {} : { executorExport: executors.name }),
      backend: s.backend,
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

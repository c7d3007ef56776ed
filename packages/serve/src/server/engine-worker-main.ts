// The engine worker's thread (built to dist/engine-worker.js): makes the executors through the module it is
// given, loads the model, and runs the in-process Scheduler over it. A step blocks this thread, never the
// HTTP thread; what each step released (admissions, tokens, completions, errors) goes back as one message
// together with the engine's stats after it, so the HTTP thread's /metrics and admission stay current.
import * as os from "node:os";
import { parentPort, workerData } from "node:worker_threads";
import { ModelError } from "@poot/models";
import { Engine, RuntimeError } from "@poot/runtime";
import type { ExecutorFactory } from "../command.js";
import { ApiError, CliError } from "../errors.js";
import { engineDevices, planDevices, type PlacedDevices, type PlacementPlan } from "../placement.js";
import type {
  EngineWorkerData,
  EngineWorkerError,
  EngineWorkerInfo,
  FromWorker,
  ToWorker,
  WireEvent,
} from "./engine-worker-protocol.js";
import { RuntimeServeEngine } from "./runtime-engine.js";
import { Scheduler } from "./scheduler.js";
import type { GenerationEvent, GenerationJob } from "./scheduler-api.js";

const data = workerData as EngineWorkerData;
const port = parentPort!;
const send = (m: FromWorker): void => port.postMessage(m);

function classify(err: unknown): { kind: EngineWorkerError["kind"]; message: string; code?: string; file?: string } {
  const e = err instanceof Error ? err : new Error(String(err));
  const kind =
    err instanceof ModelError
      ? "model"
      : err instanceof RuntimeError
        ? "runtime"
        : err instanceof CliError
          ? "cli"
          : "other";
  const code = (e as { code?: unknown }).code;
  const file = err instanceof ModelError ? err.file : err instanceof CliError ? err.context.file : undefined;
  return {
    kind,
    message: e.message,
    ...(typeof code === "string" ? { code } : {}),
    ...(file === undefined ? {} : { file }),
  };
}

async function load(): Promise<{ engine: Engine; placed: PlacedDevices; plan: PlacementPlan | null }> {
  // Linux keeps a nice value per thread, and threads inherit it: this thread and the executors' kernel threads it
  // starts below yield the CPU to the HTTP thread whenever both want it (elsewhere it would renice the process).
  if (data.nice > 0 && process.platform === "linux") os.setPriority(0, data.nice);
  const mod = (await import(data.executorModule)) as Record<string, unknown>;
  const make = mod[data.executorExport];
  if (typeof make !== "function")
    throw new Error(`${data.executorModule} has no function export ${data.executorExport}: cannot make executors`);
  // The devices the flags can name: the backend, those of --place, and the cpu (-ngl's host side).
  const named = [...(data.placement.place ?? "").matchAll(/:([A-Za-z0-9_-]+)/g)].map((m) => m[1]!);
  const names = [...new Set([data.backend, ...named, ...(data.placement.gpuLayers === undefined ? [] : ["cpu"])])];
  const factory = (await (make as (n: string[], c: string) => ExecutorFactory | Promise<ExecutorFactory>)(
    names,
    data.command,
  )) as ExecutorFactory;
  const { plan, placed } = planDevices(
    data.placement,
    data.backend,
    data.model,
    data.load.weights ?? "f32",
    data.command,
    data.backends,
    factory,
  );
  let engine: Engine;
  try {
    engine = Engine.load(data.model, {
      executor: placed.executor,
      ...engineDevices(plan, placed, factory),
      ...data.load,
    });
  } catch (err) {
    placed.dispose();
    throw err;
  }
  return { engine, placed, plan };
}

function wire(e: GenerationEvent): WireEvent {
  if (e.kind !== "error") return e;
  const { status, code, message, param, headers } = e.error;
  return { kind: "error", status, code, message, param, headers };
}

async function main(): Promise<void> {
  let loaded: Awaited<ReturnType<typeof load>>;
  try {
    loaded = await load();
  } catch (err) {
    send({ kind: "fatal", error: classify(err) });
    return;
  }
  const { engine, placed, plan } = loaded;
  if (engine.tokenizer === null) {
    // The HTTP thread refuses it (the server needs a tokenizer) and ends this thread.
    send({ kind: "ready", info: { ...infoOf(engine, plan), placement: null, tokenizer: false, prepared: null } });
    return;
  }
  const serve = new RuntimeServeEngine(engine);
  // Admission asks whether the decode program uses lanes, which stages it: do that now, not inside the first
  // admission, or the HTTP thread's queue timeout could fire on a request the worker is busy admitting.
  engine.needsLane();
  let prepared: { programs: number; seconds: number } | null = null;
  if (data.prepare) {
    const t0 = performance.now();
    try {
      engine.prepare();
    } catch (err) {
      engine.close();
      placed.dispose();
      send({ kind: "fatal", error: classify(err) });
      return;
    }
    prepared = { programs: engine.stats.programsStaged, seconds: (performance.now() - t0) / 1000 };
  }
  send({ kind: "ready", info: { ...infoOf(engine, plan), placement: serve.placement(), tokenizer: true, prepared } });

  let scheduler: Scheduler | null = null;
  const ids = new Map<GenerationJob, number>();
  const byId = new Map<number, GenerationJob>();
  let admitted: number[] = [];
  let events: { job: number; event: WireEvent }[] = [];
  let flushing = false;
  /** Sends what is pending now, with the stats and counters after it. */
  const sendNow = (): void => {
    send({
      kind: "batch",
      admitted,
      events,
      stats: serve.stats(),
      kvTokens: scheduler?.kvTokens ?? 0,
      steps: scheduler?.stepCount ?? 0,
    });
    admitted = [];
    events = [];
  };
  // Queued behind the step that released the events (setImmediate runs in order): one message per step.
  const flush = (): void => {
    if (flushing) return;
    flushing = true;
    setImmediate(() => {
      flushing = false;
      sendNow();
    });
  };
  const forget = (job: GenerationJob): void => {
    const id = ids.get(job);
    if (id === undefined) return;
    ids.delete(job);
    byId.delete(id);
  };

  port.on("message", (m: ToWorker) => {
    if (m.op === "schedule") {
      scheduler = new Scheduler(serve, {
        maxBatch: m.maxBatch,
        maxQueue: m.maxQueue,
        sink: {
          // At once, before the step it joins: the HTTP thread's queue timeout must not fire on an admitted job
          // while a long step (the first one stages its programs) runs.
          admitted: (job) => {
            const id = ids.get(job);
            if (id !== undefined) admitted.push(id);
            sendNow();
          },
          event: (job, event) => {
            const id = ids.get(job);
            if (id === undefined) return;
            events.push({ job: id, event: wire(event) });
            if (event.kind !== "token") forget(job);
            flush();
          },
        },
      });
    } else if (m.op === "submit") {
      const reqs = m.jobs.map((j) => ({ ...j.req, prompt: Array.from(j.req.prompt) }));
      let jobs: GenerationJob[];
      try {
        jobs = scheduler!.submit(reqs);
      } catch (err) {
        // The HTTP thread admitted these already; a refusal here is reported to each of them.
        const error =
          err instanceof ApiError
            ? err
            : new ApiError(500, "internal_error", `cannot queue: ${(err as Error).message}`);
        for (const j of m.jobs) events.push({ job: j.id, event: wire({ kind: "error", error }) });
        flush();
        return;
      }
      jobs.forEach((job, i) => {
        ids.set(job, m.jobs[i]!.id);
        byId.set(m.jobs[i]!.id, job);
      });
    } else if (m.op === "cancel") {
      for (const id of m.ids) {
        const job = byId.get(id);
        if (job === undefined) continue;
        forget(job);
        job.cancel();
      }
      flush();
    } else if (m.op === "call") {
      // Between steps, as the in-process server's routes run between the scheduler's steps.
      void (async () => {
        try {
          if (m.call.kind === "hidden") {
            // A copy of its own: the rows may view an executor's (shared) memory, which must not be transferred.
            const rows = (await serve.hidden(Array.from(m.call.ids))).slice();
            port.postMessage({ kind: "reply", id: m.id, hidden: rows } satisfies FromWorker, [
              rows.buffer as ArrayBuffer,
            ]);
          } else if (m.call.kind === "promptLogprobs") {
            const lp = await serve.promptLogprobs(Array.from(m.call.ids), m.call.top);
            send({ kind: "reply", id: m.id, promptLogprobs: lp });
          } else {
            send({ kind: "reply", id: m.id, relocated: await serve.relocate(m.call.place) });
            flush();
          }
        } catch (err) {
          send({ kind: "reply", id: m.id, error: (err as Error).message });
        }
      })();
    } else if (m.op === "shutdown") {
      scheduler?.shutdown();
      flush();
    } else if (m.op === "close") {
      scheduler?.shutdown();
      serve.close();
      placed.dispose();
      send({ kind: "closed" });
      port.close();
    }
  });
}

/** The engine's sizes and first stats, for the HTTP thread. */
function infoOf(
  engine: Engine,
  plan: PlacementPlan | null,
): Omit<EngineWorkerInfo, "tokenizer" | "prepared" | "placement"> {
  const kv = engine.pool.stats;
  const report = engine.placementReport();
  return {
    context: engine.context,
    kvTokens: engine.pool.pages * engine.pool.pageSize,
    vocabSize: engine.config.vocabSize,
    eosTokenIds: [...engine.config.eosTokenIds],
    hiddenSize: engine.config.hiddenSize,
    pageSize: engine.pool.pageSize,
    pagesTotal: engine.pool.pages,
    stats: {
      compiles: engine.stats.programsStaged,
      deviceBytes: engine.executor.deviceBytes(),
      openSequences: engine.openSessions,
      kv: {
        pageSize: kv.pageSize,
        pagesTotal: kv.pagesTotal,
        pagesInUse: kv.pagesInUse,
        pagesReserved: kv.pagesReserved,
      },
    },
    placementReport:
      report === null ? null : { ...report, ...(plan?.chosen === undefined ? {} : { chosen: plan.chosen }) },
  };
}

void main();

// Shared set-up of the server tests: fixture and demo-model paths, a server over the real runtime on the
// eval backend listening on a free loopback port, an OpenAI client for it, and a small /metrics reader.
import * as fs from "node:fs";
import * as path from "node:path";
import { type Executor } from "@poot/executor";
import { createEvalExecutor } from "@poot/backend-reference";
import { Tokenizer } from "@poot/models";
import { Engine } from "@poot/runtime";
import { EngineWorker, RuntimeServeEngine, createServer, type PootServer, type ServerOptions } from "@poot/serve";
import OpenAI from "openai";
import { fixture, needFixture, REPO_ROOT } from "@poot/testkit";

/** The repository root. */
export const ROOT = REPO_ROOT;
/** Why fixture tests skip (fixtures/hf/llama3 missing), or undefined; under CI a missing fixture fails instead. */
export const NO_FIXTURES: string | undefined = needFixture("hf/llama3");
/** fixtures/hf/llama3, or null when it is missing. */
export const LLAMA3: string | null = NO_FIXTURES === undefined ? fixture("hf/llama3") : null;
/** "" when the fixtures are present, else " (skipped: <why>)", for test names. */
export const SKIP_NOTE: string = NO_FIXTURES === undefined ? "" : ` (skipped: ${NO_FIXTURES})`;
/** The bundled demo model. */
export const DEMO = path.join(ROOT, "models/demo");

/** A Llama 3 chat template for the llama3 fixture, whose tokenizer ships none (its special tokens exist). */
export const LLAMA3_TEMPLATE =
  "<|begin_of_text|>{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content }}<|eot_id|>{% endfor %}" +
  "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}";

/** The llama3 fixture's tokenizer with {@link LLAMA3_TEMPLATE}, built independently of the server. */
export function llama3Tokenizer(): Tokenizer {
  const json: unknown = JSON.parse(fs.readFileSync(path.join(LLAMA3!, "tokenizer.json"), "utf8"));
  return new Tokenizer(json, {}, { chatTemplate: LLAMA3_TEMPLATE });
}

/** A running test server and its client. */
/** A server for `engine` on a free port, named after the model folder, and an OpenAI client of it. */
async function listen(
  model: string,
  options: Partial<ServerOptions>,
  engine: ServerOptions["engine"],
): Promise<{ server: PootServer; url: string; client: OpenAI }> {
  const server = createServer({ modelId: path.basename(model), ...options, engine });
  const url = await server.listen({ port: 0 });
  const client = new OpenAI({
    baseURL: `${url}/v1`,
    apiKey: options.apiKey ?? "unused",
    maxRetries: 0,
    timeout: 300_000,
  });
  return { server, url, client };
}

export interface TestServer {
  readonly url: string;
  readonly server: PootServer;
  readonly engine: Engine;
  readonly client: OpenAI;
  close(): Promise<void>;
}

/** Starts a server for `model` on the eval backend over the real runtime, listening on 127.0.0.1:0. */
export async function startTestServer(
  model: string,
  options: {
    context: number;
    chatTemplate?: string;
    kvPages?: number;
    pageSize?: number;
    prefixCache?: boolean;
    executor?: () => Executor;
  } & Partial<Omit<ServerOptions, "engine">>,
): Promise<TestServer> {
  const executor = options.executor?.() ?? createEvalExecutor();
  const engine = Engine.load(model, {
    executor,
    context: options.context,
    maxSequences: options.maxBatch ?? 8,
    ...(options.kvPages === undefined ? {} : { kvPages: options.kvPages }),
    ...(options.pageSize === undefined ? {} : { pageSize: options.pageSize }),
    ...(options.prefixCache === undefined ? {} : { prefixCache: options.prefixCache }),
  });
  // Tokenizing in the worker thread, as `poot serve` does.
  const serveEngine = new RuntimeServeEngine(engine, {
    tokenizerSource: model,
    ...(options.chatTemplate === undefined ? {} : { chatTemplate: options.chatTemplate }),
  });
  const { server, url, client } = await listen(model, options, serveEngine);
  return {
    url,
    server,
    engine,
    client,
    close: async () => {
      await server.close();
      serveEngine.close();
      executor.dispose();
    },
  };
}

/** A running test server whose engine runs on an engine worker thread, as `poot serve` runs it. */
export interface WorkerTestServer {
  readonly url: string;
  readonly server: PootServer;
  readonly worker: EngineWorker;
  readonly client: OpenAI;
  close(): Promise<void>;
}

/** The engine-worker tests' executor module (test/executors.mjs). */
export const TEST_EXECUTORS = new URL("./executors.mjs", import.meta.url);

/**
 * Starts a server for `model` with the engine and scheduler on an engine worker thread that makes its executors with
 * `executorExport` of test/executors.mjs (default: the real `backend`), listening on 127.0.0.1:0.
 */
export async function startWorkerServer(
  model: string,
  options: {
    context: number;
    backend?: "cpu" | "eval";
    executorExport?: string;
    chatTemplate?: string;
    kvPages?: number;
    pageSize?: number;
    log?: (line: string) => void;
    /** `--place` for the worker to plan (with `backends`, the device names it may use). */
    place?: string;
    backends?: readonly string[];
  } & Partial<Omit<ServerOptions, "engine">>,
): Promise<WorkerTestServer> {
  const template = options.chatTemplate === undefined ? {} : { chatTemplate: options.chatTemplate };
  const worker = await EngineWorker.start({
    model,
    executorModule: TEST_EXECUTORS,
    ...(options.executorExport === undefined ? {} : { executorExport: options.executorExport }),
    backend: options.backend ?? "eval",
    ...(options.place === undefined ? {} : { placement: { place: options.place } }),
    ...(options.backends === undefined ? {} : { backends: options.backends }),
    load: {
      context: options.context,
      maxSequences: options.maxBatch ?? 8,
      ...(options.kvPages === undefined ? {} : { kvPages: options.kvPages }),
      ...(options.pageSize === undefined ? {} : { pageSize: options.pageSize }),
    },
    ...template,
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  const { server, url, client } = await listen(model, options, worker);
  return {
    url,
    server,
    worker,
    client,
    close: async () => {
      await server.close();
      worker.close();
      await worker.exited;
    },
  };
}

/** One sample of the Prometheus text format: name, labels and value. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/**
 * Parses Prometheus text exposition format 0.0.4 (written here from the format's specification, not
 * prom-client's code): `# HELP` / `# TYPE` lines, then `name{label="value",...} number` samples.
 * Throws on any line that is not of that grammar.
 */
export function parsePrometheus(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
  const sampleRe = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: -?\\d+)?$`);
  const labelRe = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/;
  for (const line of text.split("\n")) {
    if (line === "") continue;
    if (line.startsWith("#")) {
      const m = new RegExp(`^# (HELP|TYPE) (${NAME})(?: (.*))?$`).exec(line);
      if (m === null) throw new Error(`bad comment line: ${line}`);
      if (m[1] === "TYPE") {
        if (!["counter", "gauge", "histogram", "summary", "untyped"].includes(m[3] ?? ""))
          throw new Error(`bad type: ${line}`);
        types.set(m[2]!, m[3]!);
      }
      continue;
    }
    const m = sampleRe.exec(line);
    if (m === null) throw new Error(`bad sample line: ${line}`);
    const labels: Record<string, string> = {};
    let rest = m[2] ?? "";
    while (rest !== "") {
      const l = labelRe.exec(rest);
      if (l === null) throw new Error(`bad labels: ${line}`);
      labels[l[1]!] = l[2]!.replace(/\\n/g, "\n").replace(/\\"/g, '"').replace(/\\\\/g, "\\");
      rest = rest.slice(l[0].length);
    }
    const v = m[3]!;
    const value = v === "+Inf" ? Infinity : v === "-Inf" ? -Infinity : v === "NaN" ? NaN : Number(v);
    if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(v) && !["+Inf", "-Inf", "NaN"].includes(v))
      throw new Error(`bad value: ${line}`);
    samples.push({ name: m[1]!, labels, value });
  }
  return { samples, types };
}

/** Fetches /metrics and returns the value of `name` with `labels` (0 when absent). */
export async function metric(url: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const { samples } = parsePrometheus(await (await fetch(`${url}/metrics`)).text());
  const s = samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s?.value ?? 0;
}

/** Polls `check` every 20 ms until it holds or `ms` pass. */
export async function waitFor(check: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

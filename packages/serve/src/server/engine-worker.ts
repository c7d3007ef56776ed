// The engine and its scheduler on a worker thread (issue #20, decision 2004): a CPU decode step blocks its
// thread for the whole step (the executor waits on its kernel workers), so on the HTTP thread /health and every
// stream waited for it. Here the worker owns the model, the executors and a Scheduler; the HTTP thread keeps a
// RemoteScheduler that answers admission (400/429/503) synchronously from what it knows (its own queue, the KV
// pool's size) and receives each step's tokens, completions and engine stats as one message.
// This file holds the HTTP thread's side; engine-worker-protocol.ts the messages, remote-scheduler.ts its scheduler.
import * as fs from "node:fs";
import { Worker } from "node:worker_threads";
import { loadTokenizer, type ChatMessage } from "@poot/models";
import { invariant } from "../errors.js";
import type { PlacementFlags } from "../placement.js";
import type { EngineStats, PlacementSummary, PromptLogprob, RelocateResult, RemoteServeEngine } from "./engine.js";
import {
  EngineWorkerError,
  type EngineWorkerData,
  type EngineWorkerInfo,
  type EngineWorkerLoad,
  type FromWorker,
  type ToWorker,
  type WorkerReply,
} from "./engine-worker-protocol.js";
import { RemoteScheduler } from "./remote-scheduler.js";
import type { SchedulerOptions, ServeScheduler } from "./scheduler-api.js";
import { textCodec, type TextCodec } from "./text.js";
import { TextWorker } from "./text-worker.js";

export { EngineWorkerError, type EngineWorkerInfo, type EngineWorkerLoad };

/** Options of {@link EngineWorker.start}. */
export interface EngineWorkerOptions {
  /** The model folder or .gguf file. */
  readonly model: string;
  /**
   * A module (URL or absolute file URL string) the worker imports to make executors: its export
   * `executorExport` (default `executorFactory`) is called with the device names the engine needs and the
   * command, and returns (or resolves to) an ExecutorFactory. Functions cannot cross threads; a module can.
   */
  readonly executorModule: URL | string;
  /** The factory-making export of `executorModule` (default `executorFactory`). */
  readonly executorExport?: string;
  /** The `--backend` name (the engine's default device). */
  readonly backend: string;
  /** The command named in executor errors (default `serve`). */
  readonly command?: string;
  /**
   * The placement flags (`--place`, `--gpu-layers`, memory budgets, `--no-prefetch`), planned in the worker as
   * `poot run` plans them (planDevices: the default placement asks the backend's executor for its memory).
   */
  readonly placement?: PlacementFlags;
  /** The device names `--place` may use (the CLI's backend table; default: `backend` alone). */
  readonly backends?: readonly string[];
  /** Engine.load options. */
  readonly load?: EngineWorkerLoad;
  /** A Jinja chat template replacing the model's own. */
  readonly chatTemplate?: string;
  /** Compile every program before serving (`poot serve` without --no-prepare). */
  readonly prepare?: boolean;
  /**
   * The nice value (0-19) of the engine's thread and the executor threads it starts, on Linux (default 5): when
   * the engine's compute and the HTTP thread want the same core, the HTTP thread runs first. 0 leaves it as is.
   */
  readonly nice?: number;
  /** Where a failure of the worker is reported, one line (default: stderr). */
  readonly log?: (line: string) => void;
}

/** The worker script: next to this module once bundled (dist/engine-worker.js); from the sources, the built copy. */
function workerScript(): URL {
  const candidates = [
    new URL("./engine-worker.js", import.meta.url),
    new URL("../../dist/engine-worker.js", import.meta.url),
  ];
  const found = candidates.find((u) => fs.existsSync(u));
  invariant(found !== undefined, "dist/engine-worker.js is missing: build @poot/serve (pnpm build)");
  return found;
}

/**
 * The engine on a worker thread, as the HTTP server sees it: sizes and text (a tokenizer here for output, the text
 * worker for input) and a scheduler that forwards generations to the worker. Start it with
 * {@link EngineWorker.start}; `poot serve` serves through it.
 */
export class EngineWorker implements RemoteServeEngine {
  private readonly codec: TextCodec;
  private readonly text: TextWorker;
  private scheduler: RemoteScheduler | null = null;
  private closing = false;
  private calls = 0;
  private readonly pending = new Map<number, { resolve: (r: WorkerReply) => void; reject: (e: Error) => void }>();
  /** Where the blocks are now (updated by relocations). */
  private place: PlacementSummary | null;
  /** Resolves once the worker thread has exited. */
  readonly exited: Promise<void>;
  /** The latest engine stats the worker published. */
  private latest: EngineStats;
  /** Most UTF-8 bytes of text one token can stand for (the longest token string's bytes, an upper bound). */
  readonly maxTokenBytes: number;

  private constructor(
    private readonly worker: Worker,
    /** What the worker reported on loading. */
    readonly info: EngineWorkerInfo,
    options: EngineWorkerOptions,
    exited: Promise<void>,
  ) {
    this.latest = info.stats;
    this.place = info.placement;
    this.exited = exited;
    const tok = loadTokenizer(options.model);
    this.codec = textCodec(tok, options.chatTemplate);
    let most = 1;
    for (let id = 0; id < tok.vocabSize; id++) most = Math.max(most, Buffer.byteLength(tok.idToToken(id) ?? ""));
    this.maxTokenBytes = most;
    this.text = new TextWorker({
      model: options.model,
      ...(options.chatTemplate === undefined ? {} : { chatTemplate: options.chatTemplate }),
    });
  }

  /**
   * Starts the worker, which loads the model and makes its executors; resolves once it is ready to generate.
   * @throws EngineWorkerError when the worker cannot load the model or make an executor.
   */
  static async start(options: EngineWorkerOptions): Promise<EngineWorker> {
    const data: EngineWorkerData = {
      model: options.model,
      executorModule: String(options.executorModule),
      executorExport: options.executorExport ?? "executorFactory",
      backend: options.backend,
      command: options.command ?? "serve",
      placement: options.placement ?? {},
      backends: options.backends ?? [options.backend],
      load: options.load ?? {},
      prepare: options.prepare === true,
      nice: options.nice ?? 5,
    };
    invariant(Number.isInteger(data.nice) && data.nice >= 0 && data.nice <= 19, "nice must be an integer in [0, 19]");
    const log = options.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
    // No inherited flags: a test runner's `--conditions source` would resolve @poot/* to TypeScript sources.
    const worker = new Worker(workerScript(), { workerData: data, execArgv: [] });
    let onExit: (code: number) => void = () => {};
    const exited = new Promise<void>((resolve) => {
      worker.once("exit", (code) => {
        onExit(code);
        resolve();
      });
    });
    const info = await new Promise<EngineWorkerInfo>((resolve, reject) => {
      const fail = (err: Error): void => {
        void worker.terminate();
        reject(err);
      };
      worker.once("message", (m: FromWorker) => {
        if (m.kind === "ready") resolve(m.info);
        else if (m.kind === "fatal")
          fail(new EngineWorkerError(m.error.kind, m.error.message, m.error.code, m.error.file));
        else fail(new Error(`poot internal error: the engine worker sent ${m.kind} before ready`));
      });
      worker.once("error", (err) =>
        fail(new EngineWorkerError("other", `the engine worker failed: ${err.message}`, undefined, undefined)),
      );
      onExit = (code) =>
        fail(
          new EngineWorkerError("other", `the engine worker exited (code ${code}) while loading`, undefined, undefined),
        );
    });
    worker.removeAllListeners("message");
    worker.removeAllListeners("error");
    if (!info.tokenizer) {
      await worker.terminate();
      throw new EngineWorkerError(
        "other",
        `${options.model} has no tokenizer (tokenizer.json): the server needs one`,
        "no-tokenizer",
        options.model,
      );
    }
    let self: EngineWorker;
    try {
      self = new EngineWorker(worker, info, options, exited);
    } catch (err) {
      await worker.terminate();
      throw err;
    }
    worker.on("message", (m: FromWorker) => self.received(m));
    // An uncaught error ends the worker; 'exit' follows and fails what was in flight (once).
    let lastError: string | null = null;
    worker.on("error", (err) => {
      lastError = err.message;
    });
    onExit = (code) => {
      if (self.closing) return;
      const why = `the engine worker stopped (exit code ${code})${lastError === null ? "" : `: ${lastError}`}`;
      log(`poot serve: ${why}; in-flight requests failed, /health reports failed`);
      self.scheduler?.failAll(why);
      self.failCalls(why);
    };
    return self;
  }

  private received(m: FromWorker): void {
    if (m.kind === "batch") {
      this.latest = m.stats;
      this.scheduler?.receive(m);
    } else if (m.kind === "reply") {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.error !== undefined) p?.reject(new Error(m.error));
      else p?.resolve(m);
    }
  }

  /** Rejects every call waiting for the worker. */
  private failCalls(why: string): void {
    for (const p of this.pending.values()) p.reject(new Error(why));
    this.pending.clear();
  }

  /** Asks the worker to do `call` between steps; resolves to its reply. */
  private call(call: Extract<ToWorker, { op: "call" }>["call"], transfer: ArrayBuffer[] = []): Promise<WorkerReply> {
    if (this.closing || this.scheduler?.refusing === "failed")
      return Promise.reject(new Error("the engine worker is not running"));
    const id = this.calls++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.post({ op: "call", id, call }, transfer);
    });
  }

  /** The model's hidden size. */
  get hiddenSize(): number {
    return this.info.hiddenSize;
  }

  /** The final normed hidden states of `ids` (one stateless prefill on the worker, between steps). */
  async hidden(ids: readonly number[]): Promise<Float32Array> {
    const packed = Int32Array.from(ids);
    const r = await this.call({ kind: "hidden", ids: packed }, [packed.buffer as ArrayBuffer]);
    return r.hidden!;
  }

  /** Each prompt token's logprob after the ones before it (a stateless prefill on the worker, between steps). */
  async promptLogprobs(ids: readonly number[], top: number): Promise<PromptLogprob[]> {
    const packed = Int32Array.from(ids);
    const r = await this.call({ kind: "promptLogprobs", ids: packed, top }, [packed.buffer as ArrayBuffer]);
    return r.promptLogprobs!;
  }

  /** Where the blocks are (as of the last relocation); null when the model runs as one program. */
  placement(): PlacementSummary | null {
    return this.place;
  }

  /** Moves blocks to `place`'s devices on the worker, between steps (decision 1707). */
  async relocate(place: string): Promise<RelocateResult> {
    const r = await this.call({ kind: "relocate", place });
    const result = r.relocated!;
    if ("placement" in result) this.place = result.placement;
    return result;
  }

  /** The engine's KV capacity per sequence. */
  get context(): number {
    return this.info.context;
  }

  /** Tokens the engine's whole KV page pool holds. */
  get kvTokens(): number {
    return this.info.kvTokens;
  }

  /** The model's vocabulary size. */
  get vocabSize(): number {
    return this.info.vocabSize;
  }

  /** The model config's EOS ids. */
  get eosTokenIds(): readonly number[] {
    return this.info.eosTokenIds;
  }

  /** The tokenizer's ids of `text`, from the text worker. */
  encode(text: string, special: boolean): Promise<number[]> {
    return this.text.encode(text, special);
  }

  /** The ids of the rendered chat (tools given to the template), from the text worker; null without a template. */
  encodeChat(messages: readonly ChatMessage[], tools?: readonly unknown[] | null): Promise<number[] | null> {
    return this.text.chat(messages, tools);
  }

  /** The tokenizer's decoding of `ids`. */
  textOf(ids: readonly number[]): string {
    return this.codec.tok.decode(ids);
  }

  /** One token decoded alone. */
  tokenText(id: number): string {
    return this.codec.tok.decode([id]);
  }

  /** The engine stats the worker published last (after its latest step, admission or release). */
  stats(): EngineStats {
    return this.latest;
  }

  /** The scheduler that runs generations on the worker (one per engine). */
  createScheduler(options: SchedulerOptions): ServeScheduler {
    invariant(this.scheduler === null, "an EngineWorker has one scheduler");
    this.scheduler = new RemoteScheduler(this.info, options, (m, transfer) => this.post(m, transfer));
    this.post({ op: "schedule", maxBatch: options.maxBatch, maxQueue: options.maxQueue });
    return this.scheduler;
  }

  private post(m: ToWorker, transfer: ArrayBuffer[] = []): void {
    if (!this.closing) this.worker.postMessage(m, transfer);
  }

  /**
   * Frees the engine and its executors on the worker, which then exits (await {@link EngineWorker.exited}); stops
   * the text worker. Anything still running is cancelled.
   */
  close(): void {
    if (this.closing) return;
    this.post({ op: "close" });
    this.closing = true;
    this.scheduler?.failAll("the engine was closed");
    this.failCalls("the engine was closed");
    void this.text.close();
    // A worker stuck in a step past this gets stopped.
    setTimeout(() => void this.worker.terminate(), 30_000).unref();
  }
}

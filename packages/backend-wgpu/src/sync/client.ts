// `@poot/executor`'s synchronous Executor on WebGPU in Node: the device lives in a worker thread and each
// call blocks the caller on Atomics.wait until the worker answers (decision 0700). Node only.

import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from "node:worker_threads";
import {
  ExecutorError,
  schemaOf,
  type DeviceBytes,
  type Executor,
  type ExecutorCaps,
  type OutputData,
  type ProgramSchema,
  type StageOptions,
  type StagedProgram,
  type StateSet,
  type WeightSource,
} from "@poot/executor";
import { isPacked, numel, storageBytes, validateGraph, type Graph } from "@poot/graph-ir";
import { WgpuError } from "../errors.js";
import type { OpenOptions, Reply, Request, WireError } from "./protocol.js";

/** Options of {@link createSyncWgpuExecutor}. */
export interface SyncWgpuOptions extends Partial<OpenOptions> {
  /** The worker script (default: `sync-worker.js` beside this module in the built package). */
  readonly workerUrl?: URL;
  /** Longest wait for one call, in ms (default 10 minutes: first pipeline compiles can be slow). */
  readonly timeoutMs?: number;
}

// ExecutorError prefixes its message with code, program and key; strip it so the rebuilt error reads the same.
const PREFIX = /^\[[^\]]+\](?: program [^:]*:)?(?: "[^"]*":)? /;

function rebuild(e: WireError): Error {
  if (e.name === "ExecutorError" && e.code !== undefined)
    return new ExecutorError(
      e.code as ExecutorError["code"],
      e.message.replace(PREFIX, ""),
      (e.context ?? {}) as ExecutorError["context"],
    );
  if (e.name === "WgpuError" && e.code !== undefined)
    return new WgpuError(
      e.code as WgpuError["code"],
      e.message.replace(/^[a-z-]+: /, ""),
      (e.context ?? {}) as WgpuError["context"],
    );
  const err = new Error(e.message);
  err.name = e.name;
  return err;
}

/** The blocking channel to the worker. */
class Channel {
  readonly #signal = new Int32Array(new SharedArrayBuffer(4));
  readonly #port: MessagePort;
  readonly #worker: Worker;
  readonly #timeout: number;
  #failure: Error | undefined;

  constructor(url: URL, timeoutMs: number) {
    const { port1, port2 } = new MessageChannel();
    this.#port = port1;
    this.#timeout = timeoutMs;
    // The worker runs built JavaScript: a dev-time `--conditions source` (vitest) would make it load .ts sources.
    const execArgv = process.execArgv.filter(
      (a, i, all) => !/^(--conditions|-C)(=|$)/.test(a) && !/^(--conditions|-C)$/.test(all[i - 1] ?? ""),
    );
    this.#worker = new Worker(url, {
      workerData: { signal: this.#signal.buffer, port: port2 },
      transferList: [port2],
      execArgv,
    });
    // The worker must not keep the process alive once the executor is dropped.
    this.#worker.unref();
  }

  call(r: Request): unknown {
    // 1 -> 0 only: a worker that failed to load leaves 2, which every later call reads as its error.
    Atomics.compareExchange(this.#signal, 0, 1, 0);
    this.#port.postMessage(r);
    if (Atomics.wait(this.#signal, 0, 0, this.#timeout) === "timed-out")
      throw new WgpuError("device-lost", `the device worker did not answer ${r.op} within ${this.#timeout} ms`, {
        operation: r.op,
      });
    if (Atomics.load(this.#signal, 0) === 2) {
      const failed = receiveMessageOnPort(this.#port) as { message: Reply } | undefined;
      this.#failure ??=
        failed !== undefined && !failed.message.ok
          ? rebuild(failed.message.error)
          : new WgpuError("no-webgpu", "the device worker failed to start", { operation: r.op });
      throw this.#failure;
    }
    const m = receiveMessageOnPort(this.#port) as { message: Reply } | undefined;
    if (m === undefined)
      throw new WgpuError("device-lost", `the device worker signalled ${r.op} without a reply`, { operation: r.op });
    if (!m.message.ok) throw rebuild(m.message.error);
    return m.message.value;
  }

  close(): void {
    this.#port.close();
    void this.#worker.terminate();
  }
}

class SyncStateSet implements StateSet {
  readonly bytes: number;
  constructor(
    readonly ch: Channel,
    readonly sid: number,
    readonly schema: ProgramSchema,
    readonly lanes: number,
    private readonly onDispose: (s: SyncStateSet) => void,
  ) {
    let n = 0;
    for (const s of schema.states.values()) n += storageBytes(s.dtype, s.size);
    this.bytes = n;
  }
  read(key: string): OutputData {
    return this.ch.call({ op: "stateRead", sid: this.sid, key }) as OutputData;
  }
  write(key: string, data: ArrayLike<number>): void {
    this.ch.call({ op: "stateWrite", sid: this.sid, key, data: Array.from(data) });
  }
  copyLanes(from: StateSet, fromLane: number, toLane: number, count = 1): void {
    if (!(from instanceof SyncStateSet) || from.ch !== this.ch)
      throw new ExecutorError("unknown-state", "lanes copy only between StateSets of one executor", {});
    this.ch.call({ op: "copyLanes", sid: this.sid, from: from.sid, fromLane, toLane, count });
  }
  zero(): void {
    this.ch.call({ op: "zero", sid: this.sid });
  }
  dispose(): void {
    this.ch.call({ op: "disposeState", sid: this.sid });
    this.onDispose(this);
  }
}

class SyncProgram implements StagedProgram {
  readonly #written = new Set<string>();
  constructor(
    readonly exec: SyncWgpuExecutor,
    readonly ch: Channel,
    readonly pid: number,
    readonly name: string,
    readonly schema: ProgramSchema,
  ) {}
  createState(): StateSet {
    const r = this.ch.call({ op: "createState", pid: this.pid }) as { sid: number; lanes: number };
    return this.exec.track(new SyncStateSet(this.ch, r.sid, this.schema, r.lanes, (s) => this.exec.untrack(s)));
  }
  writeSlot(key: string, data: ArrayLike<number>): void {
    this.ch.call({
      op: "writeSlot",
      pid: this.pid,
      key,
      data:
        data instanceof Float32Array || data instanceof Int32Array || data instanceof Uint32Array
          ? data
          : Array.from(data),
    });
    this.#written.add(key);
  }
  /** The contract's checks that come before weights are read (slots written, State given), in its order. */
  #precheck(state: StateSet | undefined): void {
    for (const key of this.schema.slots.keys())
      if (!this.#written.has(key))
        throw new ExecutorError("slot-unwritten", "slot was never written", { program: this.name, key });
    if (this.schema.states.size > 0 && state === undefined)
      throw new ExecutorError(
        "unknown-state",
        `the program has ${this.schema.states.size} state(s): pass a StateSet from createState()`,
        { program: this.name },
      );
  }
  #sid(state: StateSet | undefined): number | null {
    if (state === undefined) return null;
    if (!(state instanceof SyncStateSet) || state.ch !== this.ch)
      throw new ExecutorError("unknown-state", "StateSet was not made by this executor", { program: this.name });
    return state.sid;
  }
  run(state?: StateSet): void {
    this.#precheck(state);
    const sid = this.#sid(state);
    this.exec.sendWeights(this);
    this.ch.call({ op: "run", pid: this.pid, sid });
  }
  readOutput(name: string, into?: OutputData): OutputData {
    const got = this.ch.call({ op: "readOutput", pid: this.pid, name }) as OutputData;
    if (into !== undefined && into.constructor === got.constructor && into.length >= got.length) {
      into.set(got as never);
      return into;
    }
    return got;
  }
  capture(state?: StateSet): boolean {
    if (this.schema.states.size > 0 && state === undefined)
      throw new ExecutorError("unknown-state", "capture needs the StateSet the step runs against", {
        program: this.name,
      });
    const sid = this.#sid(state);
    this.exec.sendWeights(this);
    return this.ch.call({ op: "capture", pid: this.pid, sid }) as boolean;
  }
  replay(): void {
    this.exec.sendWeights(this);
    this.ch.call({ op: "replay", pid: this.pid });
  }
  dispose(): void {
    this.ch.call({ op: "disposeProgram", pid: this.pid });
  }
}

/** The built worker: beside the bundled module in dist/, or the package's dist/ when running from src/sync/. */
function defaultWorker(): URL {
  const candidates = [
    new URL("./sync-worker.js", import.meta.url),
    new URL("../../dist/sync-worker.js", import.meta.url),
  ];
  const found = candidates.find((u) => existsSync(fileURLToPath(u)));
  if (found === undefined)
    throw new WgpuError(
      "no-webgpu",
      "the device worker (dist/sync-worker.js) is not built: run `pnpm build`, or pass workerUrl",
      { operation: "createSyncWgpuExecutor" },
    );
  return found;
}

/** The WebGPU executor behind `@poot/executor`'s synchronous contract. */
export class SyncWgpuExecutor implements Executor {
  readonly caps: ExecutorCaps;
  readonly #ch: Channel;
  readonly #states = new Set<SyncStateSet>();
  #source: WeightSource | null = null;
  readonly #sent = new Set<string>();
  #disposed = false;

  constructor(options: SyncWgpuOptions = {}) {
    this.#ch = new Channel(options.workerUrl ?? defaultWorker(), options.timeoutMs ?? 600_000);
    this.caps = this.#ch.call({
      op: "open",
      options: { gpu: options.gpu ?? {}, device: options.device ?? {}, executor: options.executor ?? {} },
    }) as ExecutorCaps;
  }

  bindWeights(source: WeightSource): void {
    this.#alive();
    this.#source = source;
    this.#sent.clear();
    this.#ch.call({ op: "bindWeights" });
  }

  /** @internal Sends the weights `p` reads that the worker lacks (read from the source on this thread). */
  sendWeights(p: SyncProgram): void {
    const missing = [...p.schema.consts.values()].filter((c) => !this.#sent.has(c.key));
    if (missing.length === 0) return;
    const source = this.#source;
    if (source === null)
      throw new ExecutorError("unbound-weights", "the program reads weights: call bindWeights first", {
        program: p.name,
        key: missing[0]!.key,
      });
    const entries = missing.map((c) => {
      const d = source(c.key, { dtype: c.dtype, shape: c.shape });
      const want = isPacked(c.dtype) ? c.bytes : numel(c.shape);
      if (d.length !== want)
        throw new ExecutorError("weight-mismatch", `weight source returned ${d.length} elements, expected ${want}`, {
          program: p.name,
          key: c.key,
          expected: want,
          actual: d.length,
        });
      return [c.key, d] as const;
    });
    this.#ch.call({ op: "weights", entries });
    for (const c of missing) this.#sent.add(c.key);
  }

  stage(graph: Graph, options: StageOptions = {}): StagedProgram {
    this.#alive();
    validateGraph(graph);
    const name = options.name ?? "program";
    const pid = this.#ch.call({ op: "stage", graph, name }) as number;
    return new SyncProgram(this, this.#ch, pid, name, schemaOf(graph));
  }

  /** @internal */
  track(s: SyncStateSet): SyncStateSet {
    this.#states.add(s);
    return s;
  }

  /** @internal */
  untrack(s: SyncStateSet): void {
    this.#states.delete(s);
  }

  deviceBytes(): DeviceBytes {
    return this.#ch.call({ op: "deviceBytes" }) as DeviceBytes;
  }

  dispatchesSubmitted(): number {
    return this.#ch.call({ op: "dispatchesSubmitted" }) as number;
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#ch.call({ op: "dispose" });
    this.#ch.close();
  }

  #alive(): void {
    if (this.#disposed) throw new ExecutorError("disposed", "executor used after dispose", {});
  }
}

/** Opens a WebGPU device in a worker thread and returns a synchronous `Executor` over it (Node only). */
export function createSyncWgpuExecutor(options: SyncWgpuOptions = {}): Executor {
  return new SyncWgpuExecutor(options);
}

// The WebGPU executor: `@poot/executor`'s contract with promises where WebGPU is asynchronous (staging,
// running, reading back). Weights are bound lazily, once per executor, and shared by every staged program.

import {
  ExecutorError,
  storageOf,
  readWeight,
  schemaOf,
  type DeviceBytes,
  type ExecutorCaps,
  type ProgramSchema,
  type StageOptions,
  type WeightSource,
} from "@poot/executor";
import { dtypeName, numel, storageBytes, validateGraph, type Graph, type Value } from "@poot/graph-ir";
import type { WgpuBuffer } from "../buffers.js";
import type { CompileOptions } from "@poot/graph-plan";
import type { WgpuContext } from "../context.js";
import { WgpuProgram, type ProgramHost } from "./program.js";
import { WgpuStateSet } from "./state.js";

/** Scalar dtypes the WebGPU executor holds (16-bit and narrower types live in 32-bit words in WGSL). */
const DTYPES = ["f32", "f16", "bf16", "i32", "u32", "u8", "bool"] as const;

/** Options of {@link createWgpuExecutor}. */
export interface WgpuExecutorOptions {
  /** graph-plan options every staged graph is compiled with (e.g. `{ fusion: false }` for one kernel per primitive). */
  readonly compile?: CompileOptions;
}

/** The WebGPU executor: the async twin of `@poot/executor`'s `Executor`. */
export class WgpuExecutor {
  /** What the backend can do. */
  readonly caps: ExecutorCaps;
  /** The device context. */
  readonly ctx: WgpuContext;
  readonly #weights = new Map<string, Promise<WgpuBuffer>>();
  readonly #programs = new Set<WgpuProgram>();
  readonly #states = new Set<WgpuStateSet>();
  #source: WeightSource | null = null;
  #weightBytes = 0;
  #epoch = 0;
  #disposed = false;
  readonly #host: ProgramHost;

  readonly #compile: CompileOptions;

  constructor(ctx: WgpuContext, options: WgpuExecutorOptions = {}) {
    this.ctx = ctx;
    this.#compile = options.compile ?? {};
    this.caps = { kind: "wgpu", device: ctx.caps.adapter, dtypes: DTYPES, capture: true, deviceMemoryBytes: null };
    const self = this;
    this.#host = {
      ctx,
      weight: (key, value, program) => this.#weight(key, value, program),
      get weightsEpoch() {
        return self.#epoch;
      },
      createState: (schema, program) => this.#createState(schema, program),
      ownsState: (s) => this.#states.has(s),
      alive: () => this.#alive(),
    };
  }

  /** Sets the weight source; each Const is read from it the first time a staged program runs with it. */
  bindWeights(source: WeightSource): void {
    this.#alive();
    this.#source = source;
    for (const w of this.#weights.values())
      void w.then(
        (b) => b.destroy(),
        () => undefined,
      );
    this.#weights.clear();
    this.#weightBytes = 0;
    this.#epoch++;
  }

  #weight(key: string, value: Value, program: string): Promise<WgpuBuffer> {
    let w = this.#weights.get(key);
    if (w !== undefined) return w;
    const n = numel(value.shape);
    const data = readWeight(this.#source, key, { dtype: value.dtype, shape: value.shape }, program);
    w = this.ctx.buffers.upload("weight", storageOf(value.dtype, n, data), `weight ${key}`);
    this.#weights.set(key, w);
    this.#weightBytes += storageBytes(value.dtype, n);
    return w;
  }

  /** Compiles `graph` for this device and lowers its kernels; buffers and pipelines are made on first run. */
  async stage(graph: Graph, options: StageOptions = {}): Promise<WgpuProgram> {
    this.#alive();
    validateGraph(graph);
    const name = options.name ?? "program";
    const schema = schemaOf(graph);
    for (const s of [...schema.slots.values(), ...schema.states.values(), ...schema.outputs.values()]) {
      if (!(DTYPES as readonly string[]).includes(s.dtype))
        throw new ExecutorError("unsupported-dtype", `dtype ${dtypeName(s.dtype)} is not held by the wgpu executor`, {
          program: name,
          key: "key" in s ? s.key : s.name,
        });
    }
    const p = await WgpuProgram.stage(this.#host, graph, schema, name, this.#compile);
    this.#programs.add(p);
    return p;
  }

  async #createState(schema: ProgramSchema, program: string): Promise<WgpuStateSet> {
    const s = await WgpuStateSet.create(this.ctx, schema, program, (gone) => this.#states.delete(gone));
    this.#states.add(s);
    return s;
  }

  /** Device bytes held now. */
  deviceBytes(): DeviceBytes {
    let state = 0,
      io = 0;
    for (const s of this.#states) state += s.bytes;
    for (const p of this.#programs) io += p.ioBytes();
    return { weights: this.#weightBytes, state, io, total: this.#weightBytes + state + io };
  }

  /** Kernel dispatches submitted so far by every program (steps, replays, bind-time preparation, view copies). */
  dispatchesSubmitted(): number {
    return this.ctx.dispatchesSubmitted();
  }

  /** Frees every program, StateSet and weight, and the device. */
  dispose(): void {
    if (this.#disposed) return;
    for (const p of this.#programs) p.dispose();
    for (const s of [...this.#states]) s.dispose();
    this.#programs.clear();
    this.#weights.clear();
    this.#disposed = true;
    this.ctx.dispose();
  }

  #alive(): void {
    if (this.#disposed) throw new ExecutorError("disposed", "executor used after dispose", {});
  }
}

/** Opens the WebGPU executor on a context (from `openWgpu`); disposing the executor disposes the context. */
export function createWgpuExecutor(ctx: WgpuContext, options: WgpuExecutorOptions = {}): WgpuExecutor {
  return new WgpuExecutor(ctx, options);
}

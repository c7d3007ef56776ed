// The CUDA executor: `@poot/executor`'s contract on one NVIDIA GPU. Weights are uploaded lazily, once per
// executor, and shared by every staged program; steps run on one stream or replay as CUDA graphs.

import { ExecutorError, storageOf, readWeight, schemaOf, type DeviceBytes, type Executor, type ExecutorCaps, type ProgramSchema, type StageOptions, type StateSet, type WeightSource } from "@poot/executor";
import { dtypeName, numel, storageBytes, validateGraph, type Graph, type Value } from "@poot/graph-ir";
import type { CompileOptions } from "@poot/graph-plan";
import { createCudaContext, type CudaContext, type CudaContextOptions } from "../context.js";
import type { DeviceBuffer } from "../memory.js";
import { CudaProgram, type ProgramHost } from "./program.js";
import { CudaStateSet } from "./state.js";

/** Scalar dtypes the CUDA executor holds in Const, Slot and State buffers. */
const DTYPES = ["f32", "f16", "bf16", "i32", "u32", "u8", "bool"] as const;

/** Options of {@link createCudaExecutor}. */
export interface CudaExecutorOptions extends CudaContextOptions {
  /**
   * graph-plan options every staged graph is compiled with. Without `contractionEpilogues`, a graph of at most 8
   * tokens a step (decode: GEMV contractions) compiles with `"any"` — kernelgen runs RoPE and KV-write epilogues as
   * block GEMVs (decision record 0454) — and a larger one with `"own-element"` (decision record 0803): the tiled
   * GEMM applies epilogues only at the accumulator's own element. Without `horizontalFusion`, q/k/v are not grouped
   * (`"shared-epilogue"`): grouped, they measured no faster on the H200 (decision record 0402).
   */
  readonly compile?: CompileOptions;
}

/** The CUDA executor. */
export class CudaExecutor implements Executor {
  /** What the backend can do. */
  readonly caps: ExecutorCaps;
  /** The device context (pool, stream, module cache). */
  readonly ctx: CudaContext;
  readonly #weights = new Map<string, DeviceBuffer>();
  readonly #programs = new Set<CudaProgram>();
  readonly #states = new Set<CudaStateSet>();
  readonly #compile: CompileOptions;
  readonly #host: ProgramHost;
  #source: WeightSource | null = null;
  #weightBytes = 0;
  #epoch = 0;
  #disposed = false;

  constructor(ctx: CudaContext, options: CudaExecutorOptions = {}) {
    this.ctx = ctx;
    this.#compile = { ...options.compile };
    this.caps = { kind: "cuda", device: `${ctx.device.info.name} (${ctx.device.info.arch})`, dtypes: DTYPES, capture: true, deviceMemoryBytes: ctx.device.info.totalMemoryBytes };
    const self = this;
    this.#host = {
      ctx,
      weight: (key, value, program) => this.#weight(key, value, program),
      get weightsEpoch() {
        return self.#epoch;
      },
      createState: (schema, program) => this.#createState(schema, program),
      ownsState: (s) => s instanceof CudaStateSet && this.#states.has(s),
      alive: () => this.#alive(),
    };
  }

  /** Sets the weight source; each Const is uploaded the first time a staged program needs it, then kept. */
  bindWeights(source: WeightSource): void {
    this.#alive();
    this.ctx.synchronize();
    this.#source = source;
    for (const w of this.#weights.values()) w.dispose();
    this.#weights.clear();
    this.#weightBytes = 0;
    this.#epoch++;
  }

  #weight(key: string, value: Value, program: string): DeviceBuffer {
    const have = this.#weights.get(key);
    if (have !== undefined) return have;
    const n = numel(value.shape);
    const data = readWeight(this.#source, key, { dtype: value.dtype, shape: value.shape }, program);
    const w = this.ctx.upload(storageOf(value.dtype, n, data));
    this.#weights.set(key, w);
    this.#weightBytes += storageBytes(value.dtype, n);
    return w;
  }

  /** Compiles `graph` for this GPU, loads its kernels and allocates its slots. */
  stage(graph: Graph, options: StageOptions = {}): CudaProgram {
    this.#alive();
    validateGraph(graph);
    const name = options.name ?? "program";
    const schema = schemaOf(graph);
    for (const s of [...schema.slots.values(), ...schema.states.values(), ...schema.outputs.values()]) {
      if (!(DTYPES as readonly string[]).includes(s.dtype)) throw new ExecutorError("unsupported-dtype", `dtype ${dtypeName(s.dtype)} is not held by the cuda executor`, { program: name, key: "key" in s ? s.key : s.name });
    }
    // q/k/v stay separate launches unless asked: grouped, Llama-3.2-1B decode measured 0.98x on the H200 (decision 0402 §7).
    const epilogues = (stepTokens(graph) ?? Infinity) <= 8 ? "any" : "own-element";
    const compile: CompileOptions = { horizontalFusion: "shared-epilogue", contractionEpilogues: epilogues, ...this.#compile };
    const p = CudaProgram.stage(this.#host, graph, schema, name, compile);
    this.#programs.add(p);
    return p;
  }

  #createState(schema: ProgramSchema, program: string): CudaStateSet {
    const s = new CudaStateSet(this.ctx, schema, program, (gone) => this.#states.delete(gone));
    this.#states.add(s);
    return s;
  }

  /** Device bytes held now. */
  deviceBytes(): DeviceBytes {
    let state = 0, io = 0;
    for (const s of this.#states) state += s.bytes;
    for (const p of this.#programs) io += p.ioBytes();
    return { weights: this.#weightBytes, state, io, total: this.#weightBytes + state + io };
  }

  /** Frees every program, StateSet and weight, then the context. */
  dispose(): void {
    if (this.#disposed) return;
    for (const p of this.#programs) p.dispose();
    for (const s of [...this.#states]) (s as StateSet).dispose();
    for (const w of this.#weights.values()) w.dispose();
    this.#programs.clear();
    this.#weights.clear();
    this.#disposed = true;
    this.ctx.dispose();
  }

  #alive(): void {
    if (this.#disposed) throw new ExecutorError("disposed", "executor used after dispose", {});
  }
}

/** Opens the GPU and returns its executor; disposing the executor releases the device. Throws CudaError("no-driver") without one. */
export function createCudaExecutor(options: CudaExecutorOptions = {}): CudaExecutor {
  return new CudaExecutor(createCudaContext(options), options);
}

/** Tokens a graph takes a step (the elements of its Token slots), or undefined when it has none. */
export function stepTokens(graph: Graph): number | undefined {
  const slots = graph.values.filter((v) => v.storage.kind === "slot" && v.storage.slot === "Token");
  return slots.length === 0 ? undefined : Math.max(...slots.map((v) => numel(v.shape)));
}

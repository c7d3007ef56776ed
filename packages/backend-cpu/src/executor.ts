// The CPU executor: `@poot/executor`'s contract over one shared WebAssembly.Memory and a pool of worker threads
// (the platform's transport starts them). Weights are copied into the memory once and shared by every staged program.

import {
  ExecutorError,
  readWeight,
  schemaOf,
  stageParts,
  type DeviceBytes,
  type Executor,
  type ExecutorCaps,
  type ProgramSchema,
  type StageInput,
  type StageOptions,
  type StateSet,
  type WeightSource,
} from "@poot/executor";
import { dtypeName, numel, storageBytes, validateGraph, type Value } from "@poot/graph-ir";
import { PlanError, compile, defaultTarget, type CompileOptions, type DeviceCaps as PlanCaps } from "@poot/graph-plan";
import { synthCapsFrom } from "@poot/kernelgen";
import { loadKernels } from "./kernels.js";
import type { NativeLibrary } from "./native/library.js";
import { CpuMemory, MAX_PAGES, PAGE, type CpuCounters } from "./memory.js";
import { ThreadPool } from "./pool.js";
import { CpuProgram, writeHost, type ProgramHost, type RunMode } from "./program.js";
import { DEFAULT_CLAIMS, threadAreas } from "./schedule.js";
import { CpuStateSet } from "./state.js";
import type { CpuPlatform } from "./transport.js";

/** Scalar dtypes the CPU executor holds in Const, Slot and State buffers. */
const DTYPES = ["f32", "f16", "bf16", "i32", "u32", "u8", "bool"] as const;

/** Options of {@link createCpuExecutor}. */
export interface CpuExecutorOptions {
  /** Threads that run kernels, the calling thread included (default: the platform's core count). */
  readonly threads?: number;
  /** graph-plan options every staged graph is compiled with (default here: `horizontalFusion: "shared-epilogue"`). */
  readonly compile?: CompileOptions;
  /**
   * Native GEMVs (decision 0952): the prebuilt kernels serve the contractions they can where the platform ships
   * them (node on linux-x64 with AVX2+F16C); false runs every plan's Wasm kernel. Default true.
   */
  readonly native?: boolean;
  /** Run a step as one region (default true) or one region per dispatch (for comparison and debugging). */
  readonly fused?: boolean;
  /** Debug: every chunk checks that the previous phase completed; a violation throws `CpuError("phase-order")`. */
  readonly checkPhaseOrder?: boolean;
  /** Planted fault for tests: a phase's first claim publishes the next phase before the phase completes. */
  readonly plantEarlyPublish?: boolean;
  /** Planted fault for tests: every step allocates one typed array (the counters must see it). */
  readonly plantAllocation?: boolean;
  /** Chunks each thread may claim per phase, about (default 16): more balance the phase's end better, each claim costs an atomic. */
  readonly claimsPerThread?: number;
  /** Debug: time every phase on every thread (read with {@link CpuExecutor.takeProfile}); costs a clock read per chunk. */
  readonly profile?: boolean;
}

/** One phase of the step profile: what ran, and its times summed over the steps profiled (ms). */
export interface CpuPhaseProfile {
  /** `op/kind gx×gy×gz` of the kernel, or `copy`. */
  readonly label: string;
  /** From the phase's publication to the next phase's. */
  readonly wall: number;
  /** Per thread: running the phase's chunks. */
  readonly busy: readonly number[];
  /** Per thread: spinning or sleeping while the phase had no chunk left. */
  readonly wait: readonly number[];
}

/** The graph-plan caps of the CPU: kernelgen's cpu defaults with one-lane subgroups (the Wasm target's). */
export function cpuPlanCaps(threads: number): PlanCaps {
  return defaultTarget("cpu", { subgroupSize: 1, computeUnits: threads }).caps as PlanCaps;
}

/** Cumulative step counters of a CPU executor (bench reads differences: dispatches and regions per token). */
export interface CpuStats {
  /** Steps (run or replay). */
  readonly steps: number;
  /** Kernel dispatches in those steps (bind-time dispatches excluded). */
  readonly dispatches: number;
  /** Regions run: one per fused step, one per dispatch or copy unfused, plus bind-time regions. */
  readonly regions: number;
  /** Of the dispatches, those a native GEMV ran (decision 0952). */
  readonly nativeDispatches: number;
}

/** The CPU executor. */
export class CpuExecutor implements Executor {
  /** What the backend can do. */
  readonly caps: ExecutorCaps;
  /** The shared memory every thread and kernel works in. @internal */
  readonly memory: CpuMemory;
  /** The threads (the calling thread is thread 0). @internal */
  readonly pool: ThreadPool;
  /** The native GEMV kernels in use, or null (Wasm kernels only: none ship here, or `native: false`). */
  readonly native: NativeLibrary | null;
  readonly #weights = new Map<string, number>();
  readonly #programs = new Set<CpuProgram>();
  readonly #states = new Set<CpuStateSet>();
  readonly #options: CpuExecutorOptions;
  readonly #host: ProgramHost;
  #source: WeightSource | null = null;
  #weightBytes = 0;
  #epoch = 0;
  #disposed = false;
  #steps = 0;
  #dispatches = 0;
  #lastLabels: readonly string[] = [];
  #nativeDispatches = 0;

  /** An executor on `platform` (node: `createCpuExecutor` of `@poot/backend-cpu`; browsers: of `@poot/backend-cpu/browser`). */
  constructor(options: CpuExecutorOptions, platform: CpuPlatform) {
    const threads = options.threads ?? platform.defaultThreads;
    if (!Number.isInteger(threads) || threads < 1)
      throw new ExecutorError("unsupported-program", `threads must be a positive integer, got ${threads}`);
    const claims = options.claimsPerThread ?? DEFAULT_CLAIMS;
    if (!Number.isInteger(claims) || claims < 1)
      throw new ExecutorError("unsupported-program", `claimsPerThread must be a positive integer, got ${claims}`);
    this.#options = options;
    this.memory = new CpuMemory();
    this.native = options.native === false ? null : (platform.native?.() ?? null);
    this.pool = new ThreadPool(this.memory, threads, platform.transport, this.native);
    const kernels = this.native === null ? "Wasm SIMD128" : `native ${this.native.isa} GEMVs + Wasm SIMD128`;
    this.caps = {
      kind: "cpu",
      device: `${platform.cpu}, ${threads} thread(s) (${platform.transport.name}), ${kernels} over one shared memory`,
      dtypes: DTYPES,
      capture: true,
      deviceMemoryBytes: MAX_PAGES * PAGE,
    };
    const mode: RunMode = {
      fused: options.fused ?? true,
      claimsPerThread: claims,
      ...(options.checkPhaseOrder === true ? { checkPhaseOrder: true } : {}),
      ...(options.plantEarlyPublish === true ? { plantEarlyPublish: true } : {}),
      ...(options.plantAllocation === true ? { plantAllocation: true } : {}),
    };
    const self = this;
    this.#host = {
      mem: this.memory,
      pool: this.pool,
      mode,
      weight: (key, value, program) => this.#weight(key, value, program),
      get weightsEpoch() {
        return self.#epoch;
      },
      createState: (schema, program) => this.#createState(schema, program),
      ownsState: (s) => s instanceof CpuStateSet && this.#states.has(s),
      alive: () => this.#alive(),
      ran: (s, native) => {
        this.#steps++;
        this.#dispatches += s.dispatches;
        this.#nativeDispatches += native;
        this.#lastLabels = s.labels;
      },
    };
    if (options.profile === true) this.pool.enableProfile();
  }

  /** Sets the weight source; each Const is copied into the memory the first time a staged program needs it, then kept. */
  bindWeights(source: WeightSource): void {
    this.#alive();
    this.#source = source;
    for (const at of this.#weights.values()) this.memory.free(at);
    this.#weights.clear();
    this.#weightBytes = 0;
    this.#epoch++;
  }

  #weight(key: string, value: Value, program: string): number {
    const have = this.#weights.get(key);
    if (have !== undefined) return have;
    const n = numel(value.shape);
    const data = readWeight(this.#source, key, { dtype: value.dtype, shape: value.shape }, program);
    const bytes = storageBytes(value.dtype, n);
    const at = this.memory.alloc(bytes);
    writeHost(this.memory, value, at, data);
    this.#weights.set(key, at);
    this.#weightBytes += bytes;
    return at;
  }

  /** Compiles `input` for the CPU, lowers every plan's kernel to Wasm, loads it on every thread, allocates slots and transients. */
  stage(input: StageInput, options: StageOptions = {}): CpuProgram {
    this.#alive();
    const { graph, ops } = stageParts(input);
    validateGraph(graph, ops === undefined ? {} : { ops });
    const name = options.name ?? "program";
    const schema = schemaOf(graph);
    for (const s of [...schema.slots.values(), ...schema.states.values(), ...schema.outputs.values()]) {
      if (!(DTYPES as readonly string[]).includes(s.dtype))
        throw new ExecutorError("unsupported-dtype", `dtype ${dtypeName(s.dtype)} is not held by the cpu executor`, {
          program: name,
          key: "key" in s ? s.key : s.name,
        });
    }
    const caps = cpuPlanCaps(this.pool.threads);
    let program;
    try {
      // q/k/v stay separate launches unless asked: grouped, they measured slower here (BENCHMARKS.md, decision 0402).
      program = compile(
        graph,
        { kind: "cpu", caps },
        { horizontalFusion: "shared-epilogue", ...this.#options.compile },
      );
    } catch (e) {
      if (e instanceof PlanError)
        throw new ExecutorError("unsupported-program", `graph-plan cannot compile ${name}: ${e.message}`, {
          program: name,
        });
      throw e;
    }
    // Threads of a workgroup run one after another on one core: kernelgen's CPU shapes (decision 0451); codegen's
    // Wasm target lowers load4, so GEMVs decode and multiply four weights per SIMD op (decision 0951).
    const synth = { ...synthCapsFrom(caps), serialThreads: true, simdLoads: true };
    // Native GEMVs read and write the shared memory at its base address, which never moves (decision 0952).
    const kernels = loadKernels(
      program,
      { synth, native: this.native, base: this.native === null ? 0 : this.native.address(this.memory.u8) },
      this.pool,
      name,
    );
    const p = new CpuProgram(
      this.#host,
      name,
      schema,
      program,
      kernels,
      threadAreas(this.memory, kernels, this.pool.threads),
    );
    this.#programs.add(p);
    return p;
  }

  #createState(schema: ProgramSchema, program: string): CpuStateSet {
    const s = new CpuStateSet(this.memory, schema, program, (gone) => this.#states.delete(gone));
    this.#states.add(s);
    return s;
  }

  /** Host allocations so far (memory growths, blocks, typed arrays): a decode step after warm-up adds none. */
  counters(): CpuCounters {
    return this.memory.counters();
  }

  /** Steps run, kernel dispatches in them and host regions (threads joined) so far, cumulative. */
  stats(): CpuStats {
    return {
      steps: this.#steps,
      dispatches: this.#dispatches,
      regions: this.pool.regions,
      nativeDispatches: this.#nativeDispatches,
    };
  }

  /**
   * The step profile (option `profile`) of the phases of the last step's schedule, summed over the steps since the last
   * call (then reset); null when the profile is off. Steps of other schedules in between add to the same rows.
   */
  takeProfile(): CpuPhaseProfile[] | null {
    const p = this.pool.takeProfile();
    if (p === null) return null;
    return this.#lastLabels
      .slice(0, p.wall.length)
      .map((label, i) => ({ label, wall: p.wall[i]!, busy: p.busy.map((b) => b[i]!), wait: p.wait.map((w) => w[i]!) }));
  }

  /** Kernel dispatches run so far (the contract's counter; `stats().dispatches`). */
  dispatchesSubmitted(): number {
    return this.#dispatches;
  }

  /** Device bytes held now. */
  deviceBytes(): DeviceBytes {
    let state = 0,
      io = 0;
    for (const s of this.#states) state += s.bytes;
    for (const p of this.#programs) io += p.ioBytes();
    return { weights: this.#weightBytes, state, io, total: this.#weightBytes + state + io };
  }

  /** Stops the threads and drops everything. */
  dispose(): void {
    if (this.#disposed) return;
    for (const p of this.#programs) p.dispose();
    for (const s of [...this.#states]) s.dispose();
    this.#programs.clear();
    this.#weights.clear();
    this.#disposed = true;
    this.pool.dispose();
  }

  #alive(): void {
    if (this.#disposed) throw new ExecutorError("disposed", "executor used after dispose", {});
  }
}

// The CPU executor: @poot/executor's generic staged program over the CPU device (one shared WebAssembly.Memory and a
// pool of worker threads the platform's transport starts). Graphs are lowered through the lowering cache when given one.

import { DeviceExecutor, DeviceProgram, type LoweredProgram, type StageInput, type StageOptions } from "@poot/executor";
import { lowerWith, type LoweringCache } from "@poot/executor/lowering";
import type { CompileOptions } from "@poot/graph-plan";
import { CpuDevice, type CpuBuffer, type CpuKernel, type CpuLaunch } from "./device.js";
import type { CpuCounters, CpuMemory } from "./memory.js";
import type { CpuNumerics, NativeLibrary } from "./native/library.js";
import type { ThreadPool } from "./pool.js";
import type { Schedule } from "./schedule.js";
import type { CpuPlatform } from "./transport.js";

/** Options of {@link createCpuExecutor}. */
export interface CpuExecutorOptions {
  /** Threads that run kernels, the calling thread included (default: the platform's core count). */
  readonly threads?: number;
  /** graph-plan options every staged graph is compiled with (default here: `horizontalFusion: "shared-epilogue"`). */
  readonly compile?: CompileOptions;
  /** Lowered programs are read from and written to this cache (a second start skips graph-plan, kernelgen, codegen). */
  readonly cache?: LoweringCache;
  /**
   * Native GEMVs (decision 0952): the prebuilt kernels serve the contractions they can where the platform ships
   * them (node on linux-x64 with AVX2+F16C); false runs every plan's Wasm kernel. Default true.
   */
  readonly native?: boolean;
  /**
   * Weights stored as the CPU holds them are mapped from their file (node on Linux: the page cache's pages, private
   * to this process) instead of read into fresh memory (decision 1620). Default true; false reads them. A mapped
   * file must not be truncated while the executor holds it.
   */
  readonly mapWeights?: boolean;
  /**
   * Numerics of the packed GEMVs (decision 2320): `"exact"` (default; f32 products of decoded weights) or `"fast"`
   * (Q8_0 / Q4_K GEMVs quantize activations to 8-bit blocks and take integer dot products, as llama.cpp; needs the
   * native kernels and AVX-512 VNNI, else `CpuError("unsupported-platform")`).
   */
  readonly numerics?: CpuNumerics;
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
  /** `op/request[ native] gx×gy×gz` of the launch, or `copy`. */
  readonly label: string;
  /** From the phase's publication to the next phase's. */
  readonly wall: number;
  /** Per thread: running the phase's chunks. */
  readonly busy: readonly number[];
  /** Per thread: spinning or sleeping while the phase had no chunk left. */
  readonly wait: readonly number[];
}

/** Cumulative step counters of a CPU executor (bench reads differences: dispatches and regions per token). */
export interface CpuStats {
  /** Schedules run (steps and replays, and each weight binding's preparation). */
  readonly steps: number;
  /** Kernel dispatches in those schedules. */
  readonly dispatches: number;
  /** Regions run: one per fused schedule, one per dispatch or copy unfused. */
  readonly regions: number;
  /** Of the dispatches, those a native GEMV ran (decision 0952). */
  readonly nativeDispatches: number;
}

/** A program staged on the CPU: the generic staged program, plus how many of its launches are native GEMVs. */
export class CpuProgram extends DeviceProgram<CpuBuffer, CpuKernel, CpuLaunch, Schedule> {
  /** Of the kernel dispatches per step, the native GEMVs (decision 0952); the rest run Wasm kernels. */
  nativeDispatchesPerStep(): number {
    return this.lowered.launches.filter(
      (l) => l.phase === "step" && this.lowered.kernels[l.kernel]!.code.abi?.["nativeBuffers"] !== undefined,
    ).length;
  }
}

/** The CPU executor. */
export class CpuExecutor extends DeviceExecutor<CpuBuffer, CpuKernel, CpuLaunch, Schedule> {
  declare readonly device: CpuDevice;

  /** An executor on `platform` (node: `createCpuExecutor` of `@poot/backend-cpu`; browsers: of `@poot/backend-cpu/browser`). */
  constructor(options: CpuExecutorOptions, platform: CpuPlatform) {
    const device = new CpuDevice(options, platform);
    super(device, lowerWith(device.caps.lowering, options.cache));
  }

  /** The shared memory every thread and kernel works in. @internal */
  get memory(): CpuMemory {
    return this.device.memory;
  }

  /** The threads (the calling thread is thread 0). @internal */
  get pool(): ThreadPool {
    return this.device.pool;
  }

  /** The native GEMV kernels in use, or null (Wasm kernels only: none ship here, or `native: false`). */
  get native(): NativeLibrary | null {
    return this.device.native;
  }

  override stage(input: StageInput, options: StageOptions = {}): CpuProgram {
    return super.stage(input, options) as CpuProgram;
  }

  protected override createProgram(lowered: LoweredProgram): CpuProgram {
    return new CpuProgram(this, lowered);
  }

  /** Host allocations so far (memory growths, blocks, typed arrays): a decode step after warm-up adds none. */
  counters(): CpuCounters {
    return this.memory.counters();
  }

  /** Schedules run, kernel dispatches in them and host regions (threads joined) so far, cumulative. */
  stats(): CpuStats {
    const d = this.device;
    return { steps: d.steps, dispatches: d.dispatches, regions: d.pool.regions, nativeDispatches: d.nativeDispatches };
  }

  /**
   * The step profile (option `profile`) of the phases of the last schedule run, summed over the steps since the last
   * call (then reset); null when the profile is off. Steps of other schedules in between add to the same rows.
   */
  takeProfile(): CpuPhaseProfile[] | null {
    const p = this.pool.takeProfile();
    if (p === null) return null;
    return this.device.lastLabels
      .slice(0, p.wall.length)
      .map((label, i) => ({ label, wall: p.wall[i]!, busy: p.busy.map((b) => b[i]!), wait: p.wait.map((w) => w[i]!) }));
  }
}

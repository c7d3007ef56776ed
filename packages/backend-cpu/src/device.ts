// The CPU as a Device of @poot/executor's generic staged program: buffers are blocks of the one shared memory, kernels
// Wasm modules (or native GEMVs) loaded on every thread, a recording a schedule of phases the pool runs as one region.

import {
  ExecutorError,
  hostArrayType,
  type Device,
  type DeviceBuffer,
  type DeviceCaps,
  type DeviceOp,
  type HostBuffer,
  type LoweredBufferKind,
  type LoweredKernel,
  type WeightFileRange,
} from "@poot/executor";
import { fusionPolicy, type LoweringTarget } from "@poot/executor/lowering";
import type { TargetCode } from "@poot/codegen";
import { SCALAR_DTYPES, type ScalarDType } from "@poot/graph-ir";
import { defaultTarget, type CompileOptions, type DeviceCaps as PlanCaps } from "@poot/graph-plan";
import { synthCapsFrom } from "@poot/kernelgen";
import { CpuError, invariant } from "./errors.js";
import { CpuMemory, MAX_PAGES, PAGE } from "./memory.js";
import { ModuleCache } from "./module-cache.js";
import type { CpuNumerics, NativeLibrary } from "./native/library.js";
import { ThreadPool, type PoolKernel, type RegionDebug } from "./pool.js";
import { DEFAULT_CLAIMS, writeSchedule, type Phase, type Schedule, type ThreadAreas } from "./schedule.js";
import { ROW } from "./thread/core.js";
import type { CpuPlatform, FileMapper } from "./transport.js";

/** The codegen caps of the Wasm target: subgroups of one lane, 16-bit and byte storage loaded natively. */
export const WASM_CODEGEN_CAPS = {
  maxWorkgroup: 1024,
  subgroupSize: 1,
  sharedBytes: 1 << 20,
  dtypes: ["f32", "u32", "i32", "f16", "bf16", "u8", "i8"],
  maxStorageBuffers: 1024,
  f16: false,
  bf16: false,
} as const satisfies LoweringTarget["codegen"];

/**
 * Elementwise ops the Wasm kernels compute by calling out of the module (codegen's Wasm math imports): fusion computes
 * each such value once per step instead of in every region that reads it (graph-plan caps `costlyOps`, decision 2450).
 */
const WASM_CALLED_OPS: readonly string[] = ["Exp", "Log", "Tanh", "Erf", "Sin", "Cos"];

/**
 * The graph-plan caps of the CPU: kernelgen's cpu defaults with one-lane subgroups (the Wasm target's); the weight
 * formats of `native`'s GEMVs (`poot_gemv_<format>_none`) take only the epilogues those apply (decision 2345), SwiGLU
 * among them where the library has `poot_gemv_<format>_swiglu` (decision 2360); the ops its Wasm kernels call out for
 * are `WASM_CALLED_OPS` (decision 2450).
 */
export function cpuPlanCaps(threads: number, native: NativeLibrary | null = null): PlanCaps {
  const caps = {
    ...(defaultTarget("cpu", { subgroupSize: 1, computeUnits: threads }).caps as PlanCaps),
    costlyOps: WASM_CALLED_OPS,
  };
  const named = (epilogue: string): string[] =>
    [...(native?.kernels ?? [])]
      .flatMap((s) => new RegExp(`^poot_gemv_(\\w+)(?<!_fast)_${epilogue}$`).exec(s)?.[1] ?? [])
      .sort();
  const formats = named("none");
  if (formats.length === 0) return caps;
  const swiglu = named("swiglu").filter((f) => formats.includes(f));
  return { ...caps, residualOnlyWeights: formats, ...(swiglu.length > 0 ? { swigluWeights: swiglu } : {}) };
}

/**
 * The lowering target of a CPU device with `threads` threads and the native library `native` (null: Wasm only):
 * what the device lowers its programs for, and what `poot compile --target cpu` predicts from. `fast` picks the
 * integer dot-product GEMVs for packed weights (decision 2320).
 */
export function cpuLowering(
  threads: number,
  native: NativeLibrary | null,
  fast: boolean,
  compile?: CompileOptions,
): LoweringTarget {
  const plan = cpuPlanCaps(threads, native);
  // Threads of a workgroup run one after another on one core: kernelgen's CPU shapes (decision 0451); codegen's
  // Wasm target lowers load4, so GEMVs decode and multiply four weights per SIMD op (decision 0951).
  const synth = { ...synthCapsFrom(plan), serialThreads: true, simdLoads: true };
  // q/k/v stay separate launches unless asked: grouped, they measured slower here (decision 0402).
  const policy = fusionPolicy("cpu", compile);
  return {
    kind: "cpu",
    language: "wasm",
    plan,
    synth,
    codegen: WASM_CODEGEN_CAPS,
    lowerOptions: { maxPages: MAX_PAGES },
    compile: policy.compile,
    // An operand that is also the output is read from a copy taken before the kernel (no cross-workgroup races).
    snapshotInPlace: true,
    // The library's source hash keys the lowering cache too: a library rebuilt with new kernels (or another
    // scratch layout) must not reuse programs routed for the old one.
    ...(native === null ? {} : { native: { symbols: [...native.kernels].sort(), fast, library: native.sourceHash } }),
  };
}

/**
 * Refuses `fast` numerics (decision 2320) in one line where the native library cannot run its integer dot-product
 * kernels (no native kernels here, or a library without them: the arm64 one).
 */
export function fastCheck(native: NativeLibrary | null): void {
  if (native === null || !native.fast)
    throw new CpuError(
      "unsupported-platform",
      native === null
        ? "numerics fast needs the native CPU kernels (linux-x64), which are off or absent here: use numerics exact"
        : "numerics fast needs the native integer dot-product kernels, which this platform's library lacks: use numerics exact",
    );
}

/** How the device runs its steps (the executor's options). */
export interface CpuDeviceOptions extends RegionDebug {
  readonly threads?: number;
  readonly compile?: CompileOptions;
  readonly native?: boolean;
  /** `exact` (default) or `fast` (8-bit activations and integer dot products on packed weights, decision 2320). */
  readonly numerics?: CpuNumerics;
  readonly mapWeights?: boolean;
  readonly fused?: boolean;
  readonly plantAllocation?: boolean;
  readonly claimsPerThread?: number;
  readonly profile?: boolean;
}

/** A block of the shared memory (or a part of one). */
export interface CpuBuffer extends DeviceBuffer {
  /** Byte address. */
  readonly at: number;
  /** A weight mapped from its file: the block it sits in (its address agrees with the file offset by the page or huge page). */
  readonly block?: number;
}

/** A kernel loaded on every thread (its pool id is assigned when the batch of loads is flushed). */
export interface CpuKernel {
  id: number;
  readonly code: TargetCode;
  readonly uniforms: ReadonlyMap<string, "f32" | "i32" | "u32">;
  /** Whether a native GEMV runs it (decision 0952). */
  readonly native: boolean;
  readonly argWords: number;
  readonly sharedBytes: number;
  readonly frameBytes: number;
  /** Threads of one workgroup. */
  readonly threads: number;
  /** A native kernel whose group id names the calling thread (its `abi.threadSlots`, decision 2440). */
  readonly threadSlots: boolean;
}

/** A bound launch: the argument words of one kernel. */
export interface CpuLaunch {
  readonly kernel: CpuKernel;
  /** Buffer addresses in the kernel's binding order. */
  readonly addrs: readonly number[];
  /** Uniform raw bits in the kernel's uniform order. */
  readonly uniformBits: readonly number[];
}

const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/** A typed view (the storage array of `dtype`: f16/bf16 as bits) of `n` elements at byte address `at` (counted). */
export function hostView(mem: CpuMemory, dtype: ScalarDType, at: number, n: number): HostBuffer {
  return mem.view(hostArrayType(dtype), at, n);
}

/** The CPU device: one shared memory, a thread pool over it, and the native GEMVs where the platform has them. */
export class CpuDevice implements Device<CpuBuffer, CpuKernel, CpuLaunch, Schedule> {
  readonly caps: DeviceCaps;
  readonly memory: CpuMemory;
  readonly pool: ThreadPool;
  readonly native: NativeLibrary | null;
  /** Whether the native library's integer dot-product kernels run packed GEMVs (`fast` numerics, decision 2320). */
  readonly fast: boolean;
  readonly #files: FileMapper | null;
  /** Kernel modules by code: kernels of the same code (a layer's, again per layer) share one (decision 1670). */
  readonly #modules = new ModuleCache();
  readonly #options: CpuDeviceOptions;
  readonly #base: number;
  #pending: { kernel: CpuKernel; load: PoolKernel }[] = [];
  #areas: ThreadAreas = { base: 0, stride: 0, sharedBytes: 0 };
  #need = { shared: 16, scratch: 16 };
  /** Steps submitted, their dispatches and native dispatches, and the labels of the last one's rows. */
  steps = 0;
  dispatches = 0;
  nativeDispatches = 0;
  lastLabels: readonly string[] = [];

  constructor(options: CpuDeviceOptions, platform: CpuPlatform) {
    const threads = options.threads ?? platform.defaultThreads;
    if (!Number.isInteger(threads) || threads < 1)
      throw new ExecutorError("unsupported-program", `threads must be a positive integer, got ${threads}`);
    const claims = options.claimsPerThread ?? DEFAULT_CLAIMS;
    if (!Number.isInteger(claims) || claims < 1)
      throw new ExecutorError("unsupported-program", `claimsPerThread must be a positive integer, got ${claims}`);
    this.#options = options;
    this.memory = new CpuMemory();
    this.native = options.native === false ? null : (platform.native?.() ?? null);
    if (options.numerics === "fast") fastCheck(this.native);
    this.fast = options.numerics === "fast";
    this.#files = options.mapWeights === false ? null : (platform.files?.() ?? null);
    this.pool = new ThreadPool(this.memory, threads, platform.transport, this.native);
    // Native GEMVs read and write the shared memory at its base address, which never moves (decision 0952).
    this.#base = this.native === null ? 0 : this.native.address(this.memory.u8);
    const kernels =
      this.native === null
        ? "Wasm SIMD128"
        : `native ${this.native.isa} GEMVs${!this.fast ? "" : ` + fast numerics (8-bit activations, ${this.native.vnni && this.native.isa === "avx512" ? "AVX-512 VNNI" : "AVX2"})`} + Wasm SIMD128`;
    this.caps = {
      kind: "cpu",
      device: `${platform.cpu}, ${threads} thread(s) (${platform.transport.name}), ${kernels} over one shared memory`,
      dtypes: SCALAR_DTYPES,
      capture: true,
      deviceMemoryBytes: MAX_PAGES * PAGE,
      lowering: cpuLowering(threads, this.native, this.fast, options.compile),
    };
    if (options.profile === true) this.pool.enableProfile();
  }

  allocate(bytes: number, kind: LoweredBufferKind | "snapshot"): CpuBuffer {
    // A weight is written whole right after (upload or a read into its host view): zeroing it first is wasted.
    return { at: this.memory.alloc(bytes, kind !== "weight"), bytes };
  }

  free(buffer: CpuBuffer): void {
    // A freed mapped weight's pages stay mapped: the next owner's writes copy them (private mapping).
    this.memory.free(buffer.block ?? buffer.at);
  }

  mapWeight(bytes: number, file: WeightFileRange): CpuBuffer | null {
    const files = this.#files;
    // Below two pages there is little to map; an offset off 16 bytes would misalign the kernels' vector loads.
    if (files === null || file.length !== bytes || bytes < 2 * files.page || file.offset % 16 !== 0) return null;
    // Weights of 4 huge pages or more agree with their file offset by the huge page (at most a quarter of slack): the
    // kernel then maps the page cache's huge folios whole, and a GEMV streaming the weight misses the TLB 512 times
    // less often (decision 2420). Smaller ones by the page.
    const huge = files.address !== undefined && files.huge !== undefined && bytes >= 4 * files.huge;
    const align = huge ? files.huge! : files.page;
    const block = this.memory.alloc(bytes + align, false);
    const addr = huge ? files.address!(this.memory.view(Uint8Array, block, 1)) : block;
    const at = block + ((((file.offset - addr) % align) + align) % align);
    if (files.map(this.memory.view(Uint8Array, at, bytes), file.fd, file.offset)) return { at, bytes, block };
    this.memory.free(block);
    return null;
  }

  slice(buffer: CpuBuffer, offset: number, bytes: number): CpuBuffer {
    return { at: buffer.at + offset, bytes };
  }

  hostView(buffer: CpuBuffer, offset: number, dtype: ScalarDType, n: number): HostBuffer {
    return hostView(this.memory, dtype, buffer.at + offset, n);
  }

  upload(buffer: CpuBuffer, data: ArrayBufferView, offset = 0): void {
    const bytes = data instanceof Uint8Array ? data : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    if (bytes !== data) this.memory.countArray();
    this.memory.u8.set(bytes, buffer.at + offset);
  }

  download(buffer: CpuBuffer, offset: number, bytes: number): Uint8Array {
    this.memory.countArray();
    return this.memory.u8.slice(buffer.at + offset, buffer.at + offset + bytes);
  }

  copy(
    from: CpuBuffer,
    to: CpuBuffer,
    regions: readonly { srcOffset: number; dstOffset: number; bytes: number }[],
  ): void {
    for (const r of regions)
      this.memory.u8.copyWithin(to.at + r.dstOffset, from.at + r.srcOffset, from.at + r.srcOffset + r.bytes);
  }

  zero(buffer: CpuBuffer): void {
    this.memory.u8.fill(0, buffer.at, buffer.at + buffer.bytes);
  }

  /** Queues the kernel's load on every thread (loads go out in one batch before the next recording). */
  load(kernel: LoweredKernel): CpuKernel {
    const code = kernel.code;
    const abi = code.abi ?? {};
    const nbuf = abi["nativeBuffers"];
    const [wx, wy, wz] = code.workgroupSize;
    const k: CpuKernel = {
      id: -1,
      code,
      uniforms: new Map(kernel.uniforms.map((u) => [u.name, u.type])),
      native: nbuf !== undefined,
      argWords: abi["argWords"]!,
      sharedBytes: abi["sharedBytes"] ?? 0,
      frameBytes: abi["frameBytes"] ?? 0,
      threads: wx * wy * wz,
      threadSlots: nbuf !== undefined && abi["threadSlots"] === 1,
    };
    let load: PoolKernel;
    if (nbuf !== undefined) {
      const lib = this.native;
      invariant(lib !== null, `kernel ${code.kernel} is native but this device has no native kernels`);
      load = {
        native: { native: true, library: lib.path, koffi: lib.koffi, symbol: code.entryPoint, base: this.#base },
      };
    } else load = this.#modules.get(code.binary!, code.entryPoint);
    this.#pending.push({ kernel: k, load });
    this.#need.shared = Math.max(this.#need.shared, k.sharedBytes);
    this.#need.scratch = Math.max(this.#need.scratch, k.frameBytes * k.threads);
    return k;
  }

  bind(
    kernel: CpuKernel,
    buffers: Readonly<Record<string, CpuBuffer>>,
    uniforms: Readonly<Record<string, number>>,
  ): CpuLaunch {
    const addrs: number[] = [];
    let uniformBits: number[] = [];
    for (const slot of kernel.code.bindings) {
      if (slot.kind === "buffer") {
        const b = buffers[slot.buffer];
        invariant(b !== undefined, `kernel ${kernel.code.kernel} binds ${slot.buffer}, which the launch does not name`);
        addrs.push(b.at);
      } else if (slot.kind === "uniforms")
        uniformBits = slot.order.map((u) => {
          const v = uniforms[u];
          invariant(v !== undefined, `kernel ${kernel.code.kernel} has no value for uniform ${u}`);
          if (kernel.uniforms.get(u) !== "f32") return v >>> 0;
          F32[0] = v;
          return U32[0]!;
        });
      else invariant(false, `kernel ${kernel.code.kernel}: packed bindings do not occur on the Wasm target`);
    }
    return { kernel, addrs, uniformBits };
  }

  unbind(): void {}

  /** Writes the operations as one schedule (rows and argument blocks in the shared memory); `replay` changes nothing. */
  record(ops: readonly DeviceOp<CpuBuffer, CpuLaunch>[]): Schedule {
    this.#flush();
    const phases: Phase[] = [];
    for (const op of ops) {
      if (op.kind === "launch") {
        const label = op.plan !== undefined ? `${op.plan.op}/${op.plan.request}` : op.label;
        phases.push({ kind: "kernel", launch: op.launch, grid: op.grid, label });
      } else if (op.kind === "copy")
        for (const r of op.regions)
          phases.push({ kind: "copy", src: op.from.at + r.srcOffset, dst: op.to.at + r.dstOffset, bytes: r.bytes });
      // slot-in: slots live in the shared memory the kernels read.
    }
    return writeSchedule(this.memory, phases, this.pool.threads, this.#areas, this.#options.claimsPerThread);
  }

  /** Runs a schedule: one region of the pool (or one per phase, unfused). */
  submit(s: Schedule): void {
    const o = this.#options;
    if (o.plantAllocation === true) {
      this.memory.countArray();
      void new Float32Array(1);
    }
    this.steps++;
    this.dispatches += s.dispatches;
    this.nativeDispatches += s.native;
    this.lastLabels = s.labels;
    if (o.fused !== false) this.pool.run(s.rows, s.n, o);
    else for (let i = 0; i < s.n; i++) this.pool.run(s.rows + i * ROW.WORDS, 1, o);
  }

  /** Frees a schedule's argument blocks (its rows are never reused, decision 0950). */
  release(s: Schedule): void {
    for (const b of s.blocks) this.memory.free(b);
  }

  sync(): void {}

  dispose(): void {
    this.pool.dispose();
  }

  /** Loads the queued kernels on every thread in one batch, and makes the per-thread areas fit them. */
  #flush(): void {
    if (this.#pending.length > 0) {
      const ids = this.pool.load(this.#pending.map((p) => p.load));
      this.#pending.forEach((p, i) => void (p.kernel.id = ids[i]!));
      this.#pending = [];
    }
    const a = this.#areas,
      sharedBytes = Math.ceil(this.#need.shared / 64) * 64,
      stride = sharedBytes + Math.ceil(this.#need.scratch / 64) * 64;
    // Areas only grow; older schedules keep pointing at the areas they were written with.
    if (a.sharedBytes < sharedBytes || a.stride < stride)
      this.#areas = { base: this.memory.alloc(stride * this.pool.threads), stride, sharedBytes };
  }
}

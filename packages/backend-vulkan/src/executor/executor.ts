// The Vulkan executor (backend kind "vulkan"): the @poot/executor contract over a VulkanDevice. Graphs are
// compiled for the device's measured caps; weights upload lazily, once per executor, to device-local memory.

import { cpus } from "node:os";
import { dtypeName, numel, validateGraph, type DType, type Graph, type Shape } from "@poot/graph-ir";
import { Program, compile, makeTarget, type CompileOptions, type Target } from "@poot/graph-plan";
import { ExecutorError, stageParts, type DeviceBytes, type StageInput, type Executor, type ExecutorCaps, type ProgramSchema, type StageOptions, type StagedProgram, type StateSet, type WeightSource } from "@poot/executor";
import type { VulkanBuffer } from "../buffer.js";
import { VulkanDevice, type DeviceOptions } from "../device.js";
import { VulkanProgram } from "./program.js";
import { VulkanStateSet } from "./state.js";
import { deviceBytesOf, encodeHost } from "./storage.js";

/** Options of {@link createVulkanExecutor}. */
export interface VulkanExecutorOptions extends DeviceOptions {
  /** Run on this device (not disposed with the executor) instead of opening one. */
  readonly device?: VulkanDevice;
  /** Compile options for every staged graph (mode, fusion, imported kernels). */
  readonly compile?: CompileOptions;
  /** Record per-dispatch timestamps (read them with `VulkanProgram.timings`). Default false. */
  readonly timestamps?: boolean;
  /** Workgroups resident at once, for the planner's split decisions (default: host cores for CPU devices, else 64). */
  readonly computeUnits?: number;
}

/** Options of {@link VulkanExecutor.stage}. */
export interface VulkanStageOptions extends StageOptions {
  /** Compile options for this graph (override the executor's). */
  readonly compile?: CompileOptions;
}

/** The graph-plan target of a device, from what it reports. */
export function vulkanTarget(device: VulkanDevice, computeUnits?: number): Target {
  const i = device.info;
  return makeTarget({
    kind: "vulkan",
    caps: {
      maxWorkgroupSize: i.limits.maxWorkgroupInvocations,
      maxWorkgroupDims: i.limits.maxWorkgroupSize,
      maxGrid: i.limits.maxWorkgroupCount,
      sharedBytes: i.limits.sharedBytes,
      subgroupSize: device.caps.subgroupSize ?? 1,
      maxStorageBuffers: i.limits.maxPerStageStorageBuffers,
      maxBindingBytes: i.limits.maxStorageBufferRange,
      bindingAlignment: Math.max(4, i.limits.minStorageBufferOffsetAlignment),
      // bf16 is read as u32 words everywhere (no native bf16 type in SPIR-V); f16 natively with 16-bit storage.
      dtypes: { f16: i.storage16, bf16: false },
      matrixShapes: [],
      computeUnits: computeUnits ?? (i.type === "cpu" ? cpus().length : 64),
    },
  });
}

/** The Vulkan executor; see {@link createVulkanExecutor}. */
export class VulkanExecutor implements Executor {
  readonly caps: ExecutorCaps;
  /** The graph-plan target graphs are compiled for. */
  readonly target: Target;
  /** Bumped by bindWeights: recordings made before it point at old weight buffers. */
  weightEpoch = 0;
  private source: WeightSource | null = null;
  private readonly weights = new Map<string, VulkanBuffer>();
  private readonly programs = new Set<VulkanProgram>();
  private readonly states = new Set<VulkanStateSet>();
  private disposed = false;
  private dispatched = 0;

  constructor(
    /** The device. */
    readonly device: VulkanDevice,
    private readonly ownsDevice: boolean,
    private readonly options: VulkanExecutorOptions,
  ) {
    this.target = vulkanTarget(device, options.computeUnits);
    this.caps = {
      kind: "vulkan",
      device: `${device.info.name} (Vulkan ${device.info.apiVersion})`,
      dtypes: ["f32", "f16", "bf16", "i32", "u32", "u8", "bool"],
      capture: true,
      deviceMemoryBytes: device.info.deviceLocalBytes,
    };
  }

  /** Whether steps record timestamps. */
  get timestamps(): boolean {
    return this.options.timestamps ?? false;
  }

  /** Whether bindWeights was called. */
  get hasWeights(): boolean {
    return this.source !== null;
  }

  bindWeights(source: WeightSource): void {
    this.alive();
    this.source = source;
    for (const b of this.weights.values()) b.dispose();
    this.weights.clear();
    this.weightEpoch++;
  }

  /** The device buffer of one Const, uploaded from the weight source the first time a program needs it. */
  weightBuffer(key: string, dtype: DType, shape: Shape, program: string): VulkanBuffer {
    const hit = this.weights.get(key);
    if (hit !== undefined) return hit;
    if (this.source === null) throw new ExecutorError("unbound-weights", "the program reads weights: call bindWeights first", { program, key });
    const n = numel(shape);
    const data = encodeHost(dtype, n, this.source(key, { dtype, shape }));
    const want = deviceBytesOf(dtype, n);
    if (data.byteLength !== want) throw new ExecutorError("weight-mismatch", `${dtypeName(dtype)}[${shape.join(",")}] needs ${want} bytes, the source gave ${data.byteLength}`, { program, key, expected: want, actual: data.byteLength });
    const buf = this.device.createBuffer(want, "device", `weight ${key}`);
    this.device.upload(buf, data);
    this.weights.set(key, buf);
    return buf;
  }

  /**
   * Stages a primitive graph (compiled here for this device's target), or a graph-plan Program: used as it is
   * when it was compiled for exactly this target, else its source graph is compiled again for this device.
   */
  stage(input: StageInput, options: VulkanStageOptions = {}): VulkanProgram {
    this.alive();
    const name = options.name ?? "program";
    const opts = { ...this.options.compile, ...options.compile };
    let source: Graph, compiled: Program;
    if (input instanceof Program) {
      source = input.source;
      const same = input.target.kind === "vulkan" && JSON.stringify(input.target.caps) === JSON.stringify(this.target.caps);
      compiled = same ? input : compile(source, this.target, opts);
    } else {
      // A plain graph, or another CompiledGraph (its graph is compiled as a graph, composite ops included).
      source = stageParts(input).graph;
      validateGraph(source);
      compiled = compile(source, this.target, opts);
    }
    const p = new VulkanProgram(this, name, source, compiled);
    this.programs.add(p);
    return p;
  }

  /** A zeroed StateSet of `schema` (called by programs). */
  createState(schema: ProgramSchema, program: string): StateSet {
    const s = new VulkanStateSet(this.device, schema, program, (x) => {
      this.states.delete(x);
      for (const p of this.programs) p.dropState(x);
    });
    this.states.add(s);
    return s;
  }

  /** Whether `s` is a live StateSet of this executor. */
  owns(s: VulkanStateSet): boolean {
    return this.states.has(s);
  }

  /** Called by a program's dispose. */
  forget(p: VulkanProgram): void {
    this.programs.delete(p);
  }

  /** Called by a program for each submission: `n` kernel launches reached the queue. */
  noteDispatches(n: number): void {
    this.dispatched += n;
  }

  /** Kernel launches submitted so far by every program (steps and bind-time preparation). */
  dispatchesSubmitted(): number {
    return this.dispatched;
  }

  deviceBytes(): DeviceBytes {
    let weights = 0, state = 0, io = 0;
    for (const b of this.weights.values()) weights += b.bytes;
    for (const s of this.states) state += s.bytes;
    for (const p of this.programs) io += p.ioBytes;
    return { weights, state, io, total: weights + state + io };
  }

  /** Throws `disposed` after dispose. */
  alive(): void {
    if (this.disposed) throw new ExecutorError("disposed", "the executor was disposed");
  }

  dispose(): void {
    if (this.disposed) return;
    for (const p of [...this.programs]) p.dispose();
    for (const s of [...this.states]) s.dispose();
    for (const b of this.weights.values()) b.dispose();
    this.weights.clear();
    this.disposed = true;
    if (this.ownsDevice) this.device.dispose();
  }
}

/**
 * Creates a Vulkan executor: opens a device (validation, device choice and requirements from `options`) or
 * uses `options.device`. Throws VulkanError `no-device` / `loader-missing` when Vulkan is unavailable.
 */
export function createVulkanExecutor(options: VulkanExecutorOptions = {}): VulkanExecutor {
  if (options.device !== undefined) return new VulkanExecutor(options.device, false, options);
  return new VulkanExecutor(VulkanDevice.open(options), true, options);
}

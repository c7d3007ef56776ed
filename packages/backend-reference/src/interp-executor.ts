// The interpreter executor (backend kind "interp"): each staged graph is compiled by graph-plan for a target and
// every plan's kernel (synthesized or imported) runs in the kernel-dsl interpreter through kernelgen's `interpretProgram`.
import {
  stageParts,
  ExecutorError,
  HostStateSet,
  allocHostBuffer,
  loadHost,
  storeHost,
  checkSlotData,
  elementBytes,
  readWeight,
  schemaOf,
  type DeviceBytes,
  type Executor,
  type ExecutorCaps,
  type OutputData,
  type StageInput,
  type StageOptions,
  type StagedProgram,
  type StateSet,
  type WeightSource,
  type HostBuffer,
  type ProgramSchema,
} from "@poot/executor";
import { numel, storageBytes, validateGraph, type HostData, type ValueType } from "@poot/graph-ir";
import {
  PlanError,
  compile,
  defaultTarget,
  makeTarget,
  type CompileOptions,
  type DeviceCaps,
  type Program,
} from "@poot/graph-plan";
import { KernelgenError, interpretProgram } from "@poot/kernelgen";

/** Options of {@link createInterpExecutor}. */
export interface InterpExecutorOptions {
  /** Device caps the graphs are planned and kernels synthesized for (default: graph-plan's `"cpu"` target caps). */
  readonly caps?: DeviceCaps;
  /** graph-plan options every staged graph is compiled with (the mode defaults to graph-plan's own default). */
  readonly compile?: CompileOptions;
}

/** Capabilities of the interpreter executor. */
export const INTERP_CAPS: ExecutorCaps = {
  kind: "interp",
  device:
    "host (kernel-dsl interpreter running every plan's kernel: workgroups, shared memory, barriers, subgroups simulated)",
  dtypes: ["f32", "f16", "bf16", "i32", "u32", "u8", "bool"],
  // The interpreter has no recording to replay: callers run every step (the Engine checks this flag).
  capture: false,
  deviceMemoryBytes: null,
};

/** The interpreter executor; see {@link createInterpExecutor}. */
class InterpExecutor implements Executor {
  readonly caps = INTERP_CAPS;
  private source: WeightSource | null = null;
  private readonly weights = new Map<string, HostData>();
  private weightBytes = 0;
  /** @internal */
  readonly programs = new Set<InterpProgram>();
  /** @internal */
  readonly stateSets = new Set<HostStateSet>();
  private disposed = false;

  constructor(/** @internal */ readonly options: InterpExecutorOptions) {}

  bindWeights(source: WeightSource): void {
    this.alive();
    this.source = source;
    this.weights.clear();
    this.weightBytes = 0;
  }

  /** @internal One Const's stored data, read from the source the first time a step needs it. */
  weight(key: string, type: ValueType, program: string): HostData {
    let d = this.weights.get(key);
    if (d !== undefined) return d;
    d = readWeight(this.source, key, type, program);
    this.weights.set(key, d);
    this.weightBytes += storageBytes(type.dtype, numel(type.shape));
    return d;
  }

  stage(input: StageInput, options: StageOptions = {}): StagedProgram {
    this.alive();
    // A compiled input is planned again from its graph: a Program's plans are for its own target, not ours.
    const { graph, ops } = stageParts(input);
    validateGraph(graph, ops === undefined ? {} : { ops });
    const name = options.name ?? "program";
    const target =
      this.options.caps === undefined ? defaultTarget("cpu") : makeTarget({ kind: "cpu", caps: this.options.caps });
    let program: Program;
    try {
      program = compile(graph, target, this.options.compile ?? {});
    } catch (e) {
      if (e instanceof PlanError)
        throw new ExecutorError("unsupported-program", `graph-plan cannot compile ${name}: ${e.message}`, {
          program: name,
        });
      throw e;
    }
    const p = new InterpProgram(this, program, schemaOf(graph), name);
    this.programs.add(p);
    return p;
  }

  deviceBytes(): DeviceBytes {
    let state = 0,
      io = 0;
    for (const s of this.stateSets) state += s.bytes;
    for (const p of this.programs) io += p.ioBytes();
    return { weights: this.weightBytes, state, io, total: this.weightBytes + state + io };
  }

  dispose(): void {
    for (const p of [...this.programs]) p.dispose();
    for (const s of [...this.stateSets]) s.dispose();
    this.weights.clear();
    this.weightBytes = 0;
    this.source = null;
    this.disposed = true;
  }

  /** @internal */
  alive(): void {
    if (this.disposed) throw new ExecutorError("disposed", "executor used after dispose");
  }
}

/** A graph staged on the interpreter: its compiled Program, host slot buffers and the last step's outputs. */
class InterpProgram implements StagedProgram {
  private readonly slots = new Map<string, HostBuffer>();
  private readonly written = new Set<string>();
  private readonly outputs = new Map<string, HostBuffer>();
  private disposed = false;

  constructor(
    private readonly exec: InterpExecutor,
    /** The compiled program whose plans run. */ readonly program: Program,
    readonly schema: ProgramSchema,
    readonly name: string,
  ) {
    for (const s of schema.slots.values()) this.slots.set(s.key, allocHostBuffer(s.dtype, s.size));
    for (const o of schema.outputs.values()) this.outputs.set(o.name, allocHostBuffer(o.dtype, o.size));
  }

  ioBytes(): number {
    let n = 0;
    for (const s of this.schema.slots.values()) n += s.size * elementBytes(s.dtype);
    for (const o of this.schema.outputs.values()) n += o.size * elementBytes(o.dtype);
    return this.disposed ? 0 : n;
  }

  createState(): StateSet {
    this.alive();
    const s = new HostStateSet(this.schema, this.name, (gone) => this.exec.stateSets.delete(gone));
    this.exec.stateSets.add(s);
    return s;
  }

  writeSlot(key: string, data: ArrayLike<number>): void {
    this.alive();
    const spec = this.schema.slots.get(key);
    if (spec === undefined)
      throw new ExecutorError(
        "unknown-slot",
        `no slot "${key}" (slots: ${[...this.schema.slots.keys()].join(", ") || "none"})`,
        { program: this.name, key },
      );
    checkSlotData(spec, data, this.name);
    storeHost(spec.dtype, this.slots.get(key)!, data);
    this.written.add(key);
  }

  run(state?: StateSet): void {
    this.alive();
    for (const key of this.schema.slots.keys()) {
      if (!this.written.has(key))
        throw new ExecutorError("slot-unwritten", "slot was never written", { program: this.name, key });
    }
    const host = this.checkState(state);
    const slots: Record<string, HostData> = Object.fromEntries(this.slots);
    // State buffers are handed over as they are: the interpreter may write them in place (donation).
    const stateIn: Record<string, HostData> = {};
    if (host !== null) for (const key of this.schema.states.keys()) stateIn[key] = host.buffer(key);
    let r;
    try {
      r = interpretProgram(this.program, {
        consts: (key, type) => this.exec.weight(key, type, this.name),
        slots,
        state: stateIn,
      });
    } catch (e) {
      if (e instanceof KernelgenError)
        throw new ExecutorError("unsupported-program", `${this.name}: ${e.message}`, { program: this.name });
      throw e;
    }
    // Storage arrays come back in each value's storage dtype (f16/bf16 as bits), the layout HostBuffer uses.
    for (const o of this.schema.outputs.values()) this.outputs.get(o.name)!.set(r.outputs[o.name] as never);
    if (host !== null) for (const s of this.schema.states.values()) host.buffer(s.key).set(r.state[s.key] as never);
  }

  private checkState(state: StateSet | undefined): HostStateSet | null {
    if (this.schema.states.size === 0) return null;
    if (state === undefined)
      throw new ExecutorError(
        "unknown-state",
        `the program has ${this.schema.states.size} state(s): pass a StateSet from createState()`,
        { program: this.name },
      );
    if (!(state instanceof HostStateSet) || !this.exec.stateSets.has(state))
      throw new ExecutorError("unknown-state", "StateSet was not made by this executor", { program: this.name });
    for (const s of this.schema.states.values()) {
      const t = state.schema.states.get(s.key);
      if (t === undefined || t.size !== s.size || t.dtype !== s.dtype)
        throw new ExecutorError("unknown-state", "StateSet layout differs from the program's", {
          program: this.name,
          key: s.key,
        });
    }
    return state;
  }

  readOutput(name: string, into?: OutputData): OutputData {
    this.alive();
    const spec = this.schema.outputs.get(name);
    if (spec === undefined)
      throw new ExecutorError(
        "unknown-output",
        `no output "${name}" (outputs: ${[...this.schema.outputs.keys()].join(", ")})`,
        { program: this.name, key: name },
      );
    return loadHost(spec.dtype, this.outputs.get(name)!, into);
  }

  capture(state?: StateSet): boolean {
    this.alive();
    this.checkState(state);
    return false;
  }

  replay(): void {
    throw new ExecutorError("not-captured", "the interpreter executor cannot capture a step; run it instead", {
      program: this.name,
    });
  }

  dispose(): void {
    this.disposed = true;
    this.exec.programs.delete(this);
  }

  private alive(): void {
    this.exec.alive();
    if (this.disposed) throw new ExecutorError("disposed", "program used after dispose", { program: this.name });
  }
}

/**
 * Creates the interpreter executor (backend kind `"interp"`): every staged graph is compiled by graph-plan for the
 * `"cpu"` target (or `options.caps`), and each step runs every plan's kernel in the kernel-dsl interpreter. Slow;
 * exact kernel semantics, so it checks the whole compiled Program (plans, buffers, kernels) against the eval oracle.
 */
export function createInterpExecutor(options: InterpExecutorOptions = {}): Executor {
  return new InterpExecutor(options);
}

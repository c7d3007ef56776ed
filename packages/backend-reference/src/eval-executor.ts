// The reference executor (backend kind "eval"): graph-ir's op semantics (the float64 oracle) over host buffers,
// weight-only equations folded once or `evaluate` every step; the runtime's tests and other backends use it.
import {
  stageParts,
  ExecutorError,
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
import {
  evaluate,
  numel,
  storageBytes,
  validateGraph,
  type Graph,
  type HostData,
  type OpTable,
  type Tensor,
  type ValueType,
} from "@poot/graph-ir";
import { FoldCache, FoldedSchedule } from "./folded.js";
import { EvalStateSet } from "./eval-state.js";

/** Capabilities of the eval executor. */
export const EVAL_CAPS: ExecutorCaps = {
  kind: "eval",
  device: "host (graph-ir reference evaluator, float64 arithmetic rounded to each value's dtype)",
  dtypes: ["f32", "f16", "bf16", "i32", "u32", "u8", "bool"],
  // Replay re-runs the staged graph with the slots' current values: there is no recording to save, but the
  // contract's semantics (same step, new slot values, captured State) hold, so callers exercise the path.
  capture: true,
  deviceMemoryBytes: null,
};

/** Options of {@link createEvalExecutor}. */
export interface EvalExecutorOptions {
  /**
   * Fold weight-only equations (dtype casts, transposes, packed decodes) once and keep their results
   * (default true): the same op semantics and rounding, so outputs are bit-identical, at the cost of the
   * folded weights in float64 (8 bytes per parameter). false calls graph-ir's `evaluate` every step.
   */
  readonly foldWeights?: boolean;
}

/** The reference executor; see {@link createEvalExecutor}. */
class EvalExecutor implements Executor {
  readonly caps = EVAL_CAPS;
  /** @internal Folded weight values shared by this executor's programs. */
  readonly folds = new FoldCache();
  constructor(/** @internal */ readonly fold: boolean) {}
  private source: WeightSource | null = null;
  private readonly weights = new Map<string, HostData>();
  private weightBytes = 0;
  /** @internal Live programs and StateSets, for deviceBytes. */
  readonly programs = new Set<EvalProgram>();
  /** @internal */
  readonly stateSets = new Set<EvalStateSet>();
  private disposed = false;

  bindWeights(source: WeightSource): void {
    this.alive();
    this.source = source;
    this.weights.clear();
    this.weightBytes = 0;
    this.folds.clear();
    for (const p of this.programs) p.schedule?.reset();
  }

  /** @internal The bound data of one Const, read from the source the first time it is needed. */
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
    const { graph, ops } = stageParts(input);
    validateGraph(graph, ops === undefined ? {} : { ops });
    const name = options.name ?? "program";
    const p = new EvalProgram(this, graph, ops, schemaOf(graph), name);
    // With weights already bound, staging also prepares them (like an upload on a device backend).
    if (this.source !== null) p.schedule?.fold((key, type) => this.weight(key, type, name));
    this.programs.add(p);
    return p;
  }

  deviceBytes(): DeviceBytes {
    let state = 0,
      io = 0;
    for (const s of this.stateSets) state += s.bytes;
    for (const p of this.programs) io += p.ioBytes();
    const weights = this.weightBytes + this.folds.bytes;
    return { weights, state, io, total: weights + state + io };
  }

  dispose(): void {
    for (const p of [...this.programs]) p.dispose();
    for (const s of [...this.stateSets]) s.dispose();
    this.stateSets.clear();
    this.weights.clear();
    this.folds.clear();
    this.weightBytes = 0;
    this.source = null;
    this.disposed = true;
  }

  /** @internal */
  alive(): void {
    if (this.disposed) throw new ExecutorError("disposed", "executor used after dispose");
  }
}

/** A graph staged on the eval executor: slot buffers, last outputs, and `evaluate` per step. */
class EvalProgram implements StagedProgram {
  private readonly slots = new Map<string, HostBuffer>();
  private readonly written = new Set<string>();
  private outputs = new Map<string, HostBuffer>();
  private captured: { state: StateSet | undefined } | null = null;
  private disposed = false;
  /** @internal The folded schedule, or null when every step calls `evaluate`. */
  readonly schedule: FoldedSchedule | null;

  constructor(
    private readonly exec: EvalExecutor,
    private readonly graph: Graph,
    private readonly ops: OpTable | undefined,
    readonly schema: ProgramSchema,
    readonly name: string,
  ) {
    this.schedule = exec.fold ? new FoldedSchedule(graph, name, exec.folds, ops) : null;
    for (const s of schema.slots.values()) this.slots.set(s.key, allocHostBuffer(s.dtype, s.size));
    for (const o of schema.outputs.values()) this.outputs.set(o.name, allocHostBuffer(o.dtype, o.size));
  }

  ioBytes(): number {
    let n = 0;
    for (const s of this.schema.slots.values()) n += s.size * elementBytes(s.dtype);
    for (const o of this.schema.outputs.values()) n += o.size * elementBytes(o.dtype);
    return n;
  }

  createState(): StateSet {
    this.alive();
    const s = new EvalStateSet(this.schema, this.name, (gone) => this.exec.stateSets.delete(gone as EvalStateSet));
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
    const slots: Record<string, HostData> = {};
    for (const [k, b] of this.slots) slots[k] = b;
    const stateIn: Record<string, HostData> = {};
    const consts = (key: string, type: ValueType) => this.exec.weight(key, type, this.name);
    let outs: ReadonlyMap<string, Tensor>, states: ReadonlyMap<string, Tensor>;
    if (this.schedule !== null) {
      // State a previous step left as evaluator tensors is used as it is; the rest is read from its buffer.
      const stateTensors = new Map<string, Tensor>();
      if (host !== null) {
        for (const key of this.schema.states.keys()) {
          const t = host.tensor(key);
          if (t !== undefined) stateTensors.set(key, t);
          else stateIn[key] = host.buffer(key);
        }
      }
      const r = this.schedule.run({ consts, slots, state: stateIn, stateTensors });
      outs = r.outputs;
      states = r.state;
      for (const o of this.schema.outputs.values())
        storeHost(o.dtype, this.outputs.get(o.name)!, outs.get(o.name)!.data);
      // Donation: state_out replaces state_in; its typed buffer is written only when someone reads it.
      if (host !== null) for (const key of this.schema.states.keys()) host.setTensor(key, states.get(key)!);
      return;
    } else {
      if (host !== null) for (const key of this.schema.states.keys()) stateIn[key] = host.buffer(key);
      const r = evaluate(
        this.graph,
        { consts, slots, state: stateIn },
        this.ops === undefined ? { validate: false } : { validate: false, ops: this.ops },
      );
      outs = new Map(Object.entries(r.outputs));
      states = new Map(Object.entries(r.state));
    }
    for (const o of this.schema.outputs.values()) storeHost(o.dtype, this.outputs.get(o.name)!, outs.get(o.name)!.data);
    // Donation: state_out overwrites state_in's buffers.
    if (host !== null)
      for (const s of this.schema.states.values()) storeHost(s.dtype, host.buffer(s.key), states.get(s.key)!.data);
  }

  private checkState(state: StateSet | undefined): EvalStateSet | null {
    if (this.schema.states.size === 0) return null;
    if (state === undefined)
      throw new ExecutorError(
        "unknown-state",
        `the program has ${this.schema.states.size} state(s): pass a StateSet from createState()`,
        { program: this.name },
      );
    if (!(state instanceof EvalStateSet) || !this.exec.stateSets.has(state))
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
    this.captured = { state };
    return true;
  }

  replay(): void {
    if (this.captured === null)
      throw new ExecutorError("not-captured", "replay before capture", { program: this.name });
    this.run(this.captured.state);
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

/** Creates the reference executor (backend kind `"eval"`): graph-ir's op semantics over host buffers. */
export function createEvalExecutor(options: EvalExecutorOptions = {}): Executor {
  return new EvalExecutor(options.foldWeights ?? true);
}

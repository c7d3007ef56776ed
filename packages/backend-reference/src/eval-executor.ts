// The reference executor (backend kind "eval"): graph-ir's op semantics (the float64 oracle) over host buffers,
// weight-only equations folded once or `evaluate` every step; the runtime's tests and other backends use it.
import {
  ExecutorError,
  stageParts,
  schemaOf,
  storeHost,
  type ExecutorCaps,
  type Executor,
  type HostStateSet,
  type ProgramSchema,
  type StageInput,
  type StageOptions,
  type StagedProgram,
  type StateSet,
} from "@poot/executor";
import {
  evaluate,
  validateGraph,
  type Graph,
  type HostData,
  type OpTable,
  type Tensor,
  type ValueType,
} from "@poot/graph-ir";
import { FoldCache, FoldedSchedule } from "./folded.js";
import { EvalStateSet } from "./eval-state.js";
import { HostExecutor, HostProgram } from "./host-executor.js";

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
class EvalExecutor extends HostExecutor {
  readonly caps = EVAL_CAPS;
  /** @internal Folded weight values shared by this executor's programs. */
  readonly folds = new FoldCache();
  constructor(/** @internal */ readonly fold: boolean) {
    super();
  }

  protected override weightsChanged(): void {
    this.folds.clear();
    for (const p of this.programs) (p as EvalProgram).schedule?.reset();
  }

  protected override derivedBytes(): number {
    return this.folds.bytes;
  }

  stage(input: StageInput, options: StageOptions = {}): StagedProgram {
    this.alive();
    const { graph, ops } = stageParts(input);
    validateGraph(graph, ops === undefined ? {} : { ops });
    const name = options.name ?? "program";
    const p = new EvalProgram(this, graph, ops, schemaOf(graph), name);
    // With weights already bound, staging also prepares them (like an upload on a device backend).
    if (this.bound) p.schedule?.fold((key, type) => this.weight(key, type, name));
    this.programs.add(p);
    return p;
  }
}

/** A graph staged on the eval executor: `evaluate` (or the folded schedule) per step. */
class EvalProgram extends HostProgram<EvalStateSet> {
  private captured: { state: StateSet | undefined } | null = null;
  /** @internal The folded schedule, or null when every step calls `evaluate`. */
  readonly schedule: FoldedSchedule | null;

  constructor(
    exec: EvalExecutor,
    private readonly graph: Graph,
    private readonly ops: OpTable | undefined,
    schema: ProgramSchema,
    name: string,
  ) {
    super(exec, schema, name);
    this.schedule = exec.fold ? new FoldedSchedule(graph, name, exec.folds, ops) : null;
  }

  protected newState(onDispose: (s: HostStateSet) => void): EvalStateSet {
    return new EvalStateSet(this.schema, this.name, onDispose);
  }

  protected step(host: EvalStateSet | null): void {
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
}

/** Creates the reference executor (backend kind `"eval"`): graph-ir's op semantics over host buffers. */
export function createEvalExecutor(options: EvalExecutorOptions = {}): Executor {
  return new EvalExecutor(options.foldWeights ?? true);
}

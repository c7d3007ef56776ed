// The interpreter executor (backend kind "interp"): each staged graph is compiled by graph-plan for a target and
// every plan's kernel (synthesized or imported) runs in the kernel-dsl interpreter through kernelgen's `interpretProgram`.
import {
  ExecutorError,
  HostStateSet,
  schemaOf,
  stageParts,
  type Executor,
  type ExecutorCaps,
  type ProgramSchema,
  type StageInput,
  type StageOptions,
  type StagedProgram,
  type StateSet,
} from "@poot/executor";
import { validateGraph, type HostData } from "@poot/graph-ir";
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
import { HostExecutor, HostProgram } from "./host-executor.js";

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
class InterpExecutor extends HostExecutor {
  readonly caps = INTERP_CAPS;

  constructor(/** @internal */ readonly options: InterpExecutorOptions) {
    super();
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
}

/** A graph staged on the interpreter: its compiled Program, whose plans' kernels run in the interpreter per step. */
class InterpProgram extends HostProgram {
  constructor(
    exec: InterpExecutor,
    /** The compiled program whose plans run. */ readonly program: Program,
    schema: ProgramSchema,
    name: string,
  ) {
    super(exec, schema, name);
  }

  protected newState(onDispose: (s: HostStateSet) => void): HostStateSet {
    return new HostStateSet(this.schema, this.name, onDispose);
  }

  protected step(host: HostStateSet | null): void {
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
}

/**
 * Creates the interpreter executor (backend kind `"interp"`): every staged graph is compiled by graph-plan for the
 * `"cpu"` target (or `options.caps`), and each step runs every plan's kernel in the kernel-dsl interpreter. Slow;
 * exact kernel semantics, so it checks the whole compiled Program (plans, buffers, kernels) against the eval oracle.
 */
export function createInterpExecutor(options: InterpExecutorOptions = {}): Executor {
  return new InterpExecutor(options);
}

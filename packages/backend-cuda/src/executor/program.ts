// A graph staged on one CUDA device: compiled by graph-plan, each plan's kernel from kernelgen lowered to PTX
// and loaded once; a step (slot copies, launches, State copies) runs on the stream or replays as a CUDA graph.

import { ExecutorError, outputOf, storageOf, checkSlotData, elementBytes, type OutputData, type ProgramSchema, type StagedProgram, type StateSet } from "@poot/executor";
import { numel, storageBytes, type Graph, type Value } from "@poot/graph-ir";
import { compile, makeTarget, type CompileOptions, type Plan, type Program } from "@poot/graph-plan";
import { KernelgenError, planKernel, type BindingSource } from "@poot/kernelgen";
import type { CompiledKernel, CudaContext } from "../context.js";
import { CudaError } from "../errors.js";
import type { CudaGraph } from "../graph.js";
import type { Dim3, LaunchParams } from "../launch.js";
import type { DeviceBuffer, PinnedBuffer } from "../memory.js";
import { planCapsOf, synthCapsOf } from "./plan-caps.js";
import { stateCopies, viewRegions, type ByteRegion } from "@poot/executor";
import { CudaStateSet } from "./state.js";

/** One launch of a profiled step ({@link CudaProgram.profile}). */
export interface KernelTiming {
  /** The plan's op. */
  readonly op: string;
  /** The plan's equation id in the compiled graph. */
  readonly eqn: number;
  /** The kernel's entry point. */
  readonly kernel: string;
  /** The launch grid. */
  readonly grid: Dim3;
  /** GPU microseconds between the events around the launch. */
  readonly us: number;
}

/** What a program needs from its executor. */
export interface ProgramHost {
  readonly ctx: CudaContext;
  /** The device buffer of a weight (uploaded from the bound source on first use). */
  weight(key: string, value: Value, program: string): DeviceBuffer;
  /** Bumped by every bindWeights: launches bound to older weight buffers are rebuilt. */
  readonly weightsEpoch: number;
  /** Makes a StateSet for `schema`. */
  createState(schema: ProgramSchema, program: string): CudaStateSet;
  /** Whether `s` is a live StateSet of this executor. */
  ownsState(s: StateSet): boolean;
  /** Throws `disposed` after the executor's dispose. */
  alive(): void;
}

interface Lowered {
  readonly plan: Plan;
  readonly compiled: CompiledKernel;
  readonly grid: Dim3;
  readonly uniforms: Readonly<Record<string, number>>;
  readonly bindings: readonly { readonly buffer: string; readonly source: BindingSource }[];
  /** A program-owned scratch buffer bound by kernel buffer name (flash-decode's partials, shared with the combine). */
  readonly transient?: { readonly buffer: string; readonly dev: DeviceBuffer };
}

/** One bound launch: snapshot copies first (an operand that is also the output), then the kernel. */
interface Bound {
  readonly l: Lowered;
  readonly params: LaunchParams;
  readonly snapshots: readonly { readonly from: DeviceBuffer; readonly to: DeviceBuffer }[];
}

interface StepBinding {
  readonly launches: Bound[];
  /** State copies after the launches, region by region (a strided state_out is gathered densely). */
  readonly after: readonly { readonly from: DeviceBuffer; readonly to: DeviceBuffer; readonly regions: readonly ByteRegion[] }[];
  readonly epoch: number;
}

/** A graph staged on a CUDA device (`@poot/executor`'s StagedProgram). */
export class CudaProgram implements StagedProgram {
  readonly name: string;
  readonly schema: ProgramSchema;
  /** The compiled program (plans, kernel provenance). */
  readonly program: Program;
  readonly #host: ProgramHost;
  readonly #lowered: readonly Lowered[];
  readonly #slots = new Map<string, { dev: DeviceBuffer; pinned: PinnedBuffer; bytes: number }>();
  readonly #written = new Set<string>();
  readonly #owned = new Map<number, DeviceBuffer>();
  readonly #steps = new Map<StateSet | null, StepBinding>();
  readonly #scratch: DeviceBuffer[] = [];
  /** Pinned host memory each output is read through (a copy into pageable memory is several times slower). */
  readonly #staging = new Map<string, PinnedBuffer>();
  #prepared = -1;
  #last: CudaStateSet | null = null;
  #captured: { state: CudaStateSet | null; graph: CudaGraph; epoch: number } | null = null;
  #disposed = false;

  private constructor(host: ProgramHost, name: string, schema: ProgramSchema, program: Program, lowered: Lowered[]) {
    this.#host = host;
    this.name = name;
    this.schema = schema;
    this.program = program;
    this.#lowered = lowered;
  }

  /** Compiles `graph` for the device, lowers and loads every plan's kernel, allocates the slots. */
  static stage(host: ProgramHost, graph: Graph, schema: ProgramSchema, name: string, options: CompileOptions = {}): CudaProgram {
    const ctx = host.ctx;
    const caps = planCapsOf(ctx);
    const program = compile(graph, makeTarget({ kind: "cuda", caps }), options);
    const synth = synthCapsOf(caps);
    // Kernel names become PTX entry points: identifiers only.
    const ident = name.replace(/[^A-Za-z0-9_]/g, "_").replace(/^(?=[0-9])/, "k");
    const lowered: Lowered[] = [];
    const transients: DeviceBuffer[] = [];
    program.plans().forEach((p, i) => {
      const src = p.kernel;
      if (src.provenance === "none") return;
      let k;
      try {
        k = planKernel(src, synth, `${ident}_p${i}_${p.op.toLowerCase()}`);
      } catch (e) {
        if (!(e instanceof KernelgenError)) throw e;
        throw new CudaError("unsupported-kernel", `plan ${i} (${p.op}, ${src.request.kind}, eqn ${p.eqn}) of ${name}: ${e.message}`, { kernel: p.op, value: p.eqn });
      }
      const transient = k.transient === undefined ? undefined : { buffer: k.transient.buffer, dev: ctx.allocate(4 * k.transient.elements) };
      if (transient !== undefined) transients.push(transient.dev);
      const t = transient === undefined ? {} : { transient };
      lowered.push({ plan: p, compiled: ctx.compile(k.kernel), grid: k.grid, uniforms: k.uniforms, bindings: k.bindings, ...t });
      if (k.then !== undefined) lowered.push({ plan: p, compiled: ctx.compile(k.then.kernel), grid: k.then.grid, uniforms: k.then.uniforms, bindings: k.then.bindings, ...t });
    });
    const prog = new CudaProgram(host, name, schema, program, lowered);
    prog.#scratch.push(...transients);
    for (const s of schema.slots.values()) {
      const bytes = s.size * elementBytes(s.dtype);
      prog.#slots.set(s.key, { dev: ctx.allocate(bytes), pinned: ctx.pinned(Math.max(4, bytes)), bytes });
    }
    return prog;
  }

  #root(id: number): number {
    return this.program.buffers().aliases.get(id) ?? id;
  }

  /** The device buffer holding root value `root` for a run against `state`. */
  #buffer(root: number, state: CudaStateSet | null): DeviceBuffer {
    const v = this.program.graph.values[root] as Value;
    const s = v.storage;
    switch (s.kind) {
      case "const": return this.#host.weight(s.key, v, this.name);
      case "slot": return this.#slots.get(s.key)!.dev;
      case "state":
        if (state === null) throw new ExecutorError("unknown-state", "the program has state: pass a StateSet from createState()", { program: this.name });
        return state.buffer(s.key);
      case "computed":
      case "device": {
        let b = this.#owned.get(root);
        if (b === undefined) {
          const n = numel(v.shape);
          b = this.#host.ctx.allocate(storageBytes(v.dtype, n));
          if (s.kind === "computed") b.upload(storageOf(v.dtype, n, s.data));
          this.#owned.set(root, b);
        }
        return b;
      }
      default:
        return s satisfies never;
    }
  }

  #bind(phase: "step" | "bind", state: CudaStateSet | null): Bound[] {
    const out: Bound[] = [];
    for (const l of this.#lowered) {
      if (l.plan.phase !== phase || l.plan.kernel.provenance === "none") continue;
      const req = l.plan.kernel.request;
      const outRoot = this.#root(req.output.root);
      const buffers: Record<string, DeviceBuffer> = l.transient === undefined ? {} : { [l.transient.buffer]: l.transient.dev };
      const snapshots: { from: DeviceBuffer; to: DeviceBuffer }[] = [];
      for (const { buffer, source } of l.bindings) {
        const root = source.kind === "output" ? outRoot : this.#root(req.inputs[source.index]!.root);
        let b = this.#buffer(root, state);
        // An operand that is also the output is read from a copy taken before the kernel (no cross-block races).
        if (source.kind === "input" && root === outRoot) {
          const snap = this.#host.ctx.allocate(b.bytes);
          this.#scratch.push(snap);
          snapshots.push({ from: b, to: snap });
          b = snap;
        }
        buffers[buffer] = b;
      }
      out.push({ l, params: l.compiled.bind({ buffers, uniforms: l.uniforms }), snapshots });
    }
    return out;
  }

  #enqueue(launches: readonly Bound[]): void {
    const stream = this.#host.ctx.stream;
    for (const b of launches) {
      for (const s of b.snapshots) s.to.copyFrom(s.from, s.from.bytes, stream);
      b.l.compiled.launch(b.l.grid, b.params, stream);
    }
  }

  /** Launches bound for `state` (bind-phase plans run first, once per weight binding). */
  #stepFor(state: CudaStateSet | null): StepBinding {
    const epoch = this.#host.weightsEpoch;
    if (this.#prepared !== epoch) {
      const prep = this.#bind("bind", null);
      this.#enqueue(prep);
      this.#host.ctx.synchronize();
      for (const b of prep) b.params.dispose();
      this.#prepared = epoch;
    }
    const have = this.#steps.get(state);
    if (have !== undefined && have.epoch === epoch) return have;
    if (have !== undefined) for (const b of have.launches) b.params.dispose();
    const launches = this.#bind("step", state);
    // A state_out computed outside its State buffer is copied into it after the step (donation); when it is a
    // view of its root (a slice of a concatenation, as in a conv state) only the elements it covers are copied.
    const after = stateCopies(this.program.graph, (v) => this.#root(v)).map((c) => ({ from: this.#buffer(c.from, state), to: this.#buffer(c.to, state), regions: c.regions }));
    const step = { launches, after, epoch };
    this.#steps.set(state, step);
    return step;
  }

  /** Enqueues one step: slot copies from pinned memory, the launches, the State copies. */
  #enqueueStep(step: StepBinding): void {
    const stream = this.#host.ctx.stream;
    for (const s of this.#slots.values()) s.pinned.copyTo(s.dev, stream, s.bytes);
    this.#enqueue(step.launches);
    for (const c of step.after) for (const r of c.regions) c.to.copyRange(c.from, r.srcOffset, r.dstOffset, r.bytes, stream);
  }

  /** A zeroed StateSet with this program's state layout. */
  createState(): CudaStateSet {
    this.#alive();
    return this.#host.createState(this.schema, this.name);
  }

  /** Writes one slot into its pinned host buffer (checked against the schema); the next step copies it. */
  writeSlot(key: string, data: ArrayLike<number>): void {
    this.#alive();
    const spec = this.schema.slots.get(key);
    if (spec === undefined) throw new ExecutorError("unknown-slot", `no slot "${key}" (slots: ${[...this.schema.slots.keys()].join(", ") || "none"})`, { program: this.name, key });
    checkSlotData(spec, data, this.name);
    this.#slots.get(key)!.pinned.write(storageOf(spec.dtype, spec.size, data));
    this.#written.add(key);
  }

  #checkState(state: StateSet | undefined): CudaStateSet | null {
    if (this.schema.states.size === 0) return null;
    if (state === undefined) throw new ExecutorError("unknown-state", `the program has ${this.schema.states.size} state(s): pass a StateSet from createState()`, { program: this.name });
    if (!(state instanceof CudaStateSet) || !this.#host.ownsState(state)) throw new ExecutorError("unknown-state", "StateSet was not made by this executor", { program: this.name });
    for (const s of this.schema.states.values()) {
      const t = state.schema.states.get(s.key);
      if (t === undefined || t.size !== s.size || t.dtype !== s.dtype) throw new ExecutorError("unknown-state", "StateSet layout differs from the program's", { program: this.name, key: s.key });
    }
    return state;
  }

  #checkSlots(): void {
    for (const key of this.schema.slots.keys()) {
      if (!this.#written.has(key)) throw new ExecutorError("slot-unwritten", "slot was never written", { program: this.name, key });
    }
  }

  /** Runs one step and waits for it (so the pinned slots may be rewritten right after). */
  run(state?: StateSet): void {
    this.#alive();
    this.#checkSlots();
    const st = this.#checkState(state);
    this.#enqueueStep(this.#stepFor(st));
    this.#host.ctx.synchronize();
    this.#last = st;
  }

  /** Copies an output to the host (f16/bf16 widened to f32). */
  readOutput(name: string, into?: OutputData): OutputData {
    this.#alive();
    const spec = this.schema.outputs.get(name);
    if (spec === undefined) throw new ExecutorError("unknown-output", `no output "${name}" (outputs: ${[...this.schema.outputs.keys()].join(", ")})`, { program: this.name, key: name });
    const o = this.program.graph.outputs.find((x) => x.name === name)!;
    this.#host.ctx.synchronize();
    const root = this.#root(o.value);
    const buf = this.#buffer(root, this.#last);
    const n = storageBytes(spec.dtype, spec.size);
    const regions = viewRegions(this.program.graph, o.value, root);
    if (regions.length === 1) {
      let staging = this.#staging.get(name);
      if (staging === undefined) {
        staging = this.#host.ctx.pinned(Math.max(4, n));
        this.#staging.set(name, staging);
      }
      const view = staging.bytesView.subarray(0, n);
      buf.download(view, regions[0]!.srcOffset);
      return outputOf(spec.dtype, view, spec.size, into);
    }
    // A strided view of its root (a transpose, a broadcast): read the root once and gather its runs.
    const bytes = new Uint8Array(n);
    const all = buf.download(new Uint8Array(buf.bytes));
    for (const r of regions) bytes.set(all.subarray(r.srcOffset, r.srcOffset + r.bytes), r.dstOffset);
    return outputOf(spec.dtype, bytes, spec.size, into);
  }

  /** Captures the step for `state` as a CUDA graph; {@link replay} repeats it with the slots' values at replay time. */
  capture(state?: StateSet): boolean {
    this.#alive();
    this.#checkSlots();
    const st = this.#checkState(state);
    const step = this.#stepFor(st);
    this.#captured?.graph.dispose();
    this.#captured = { state: st, graph: this.#host.ctx.capture(() => this.#enqueueStep(step)), epoch: step.epoch };
    return true;
  }

  /** Replays the captured step against the StateSet it was captured with (re-captured after a new bindWeights). */
  replay(): void {
    this.#alive();
    const c = this.#captured;
    if (c === null) throw new ExecutorError("not-captured", "replay before capture", { program: this.name });
    if (c.epoch !== this.#host.weightsEpoch) this.capture(c.state ?? undefined);
    this.#captured!.graph.launch(this.#host.ctx.stream);
    this.#host.ctx.synchronize();
    this.#last = this.#captured!.state;
  }

  /**
   * Runs one step with an event after each launch and returns each launch's GPU time (for finding the slow
   * kernels of a step; the events serialize nothing that the stream did not already order).
   */
  profile(state?: StateSet): KernelTiming[] {
    this.#alive();
    this.#checkSlots();
    const st = this.#checkState(state);
    const step = this.#stepFor(st);
    const ctx = this.#host.ctx, stream = ctx.stream;
    for (const s of this.#slots.values()) s.pinned.copyTo(s.dev, stream, s.bytes);
    const events = [ctx.createEvent()];
    events[0]!.record(stream);
    for (const b of step.launches) {
      this.#enqueue([b]);
      const e = ctx.createEvent();
      e.record(stream);
      events.push(e);
    }
    for (const c of step.after) for (const r of c.regions) c.to.copyRange(c.from, r.srcOffset, r.dstOffset, r.bytes, stream);
    ctx.synchronize();
    this.#last = st;
    const out = step.launches.map((b, i) => ({ op: b.l.plan.op, eqn: b.l.plan.eqn, kernel: b.l.compiled.code.entryPoint, grid: b.l.grid, us: 1000 * events[i + 1]!.elapsedSince(events[i]!) }));
    for (const e of events) e.dispose();
    return out;
  }

  /** Kernel launches per step. */
  dispatchesPerStep(): number {
    return this.#lowered.filter((l) => l.plan.phase === "step").length;
  }

  /** Bytes of slots and program-owned buffers. */
  ioBytes(): number {
    if (this.#disposed) return 0;
    let n = 0;
    for (const s of this.#slots.values()) n += s.bytes;
    for (const b of [...this.#owned.values(), ...this.#scratch]) n += b.bytes;
    return n;
  }

  /** Frees the program's buffers, graphs and launch parameters. */
  dispose(): void {
    if (this.#disposed) return;
    this.#host.ctx.synchronize();
    this.#disposed = true;
    this.#captured?.graph.dispose();
    for (const s of this.#steps.values()) for (const b of s.launches) b.params.dispose();
    for (const s of this.#slots.values()) {
      s.dev.dispose();
      s.pinned.dispose();
    }
    for (const b of [...this.#owned.values(), ...this.#scratch]) b.dispose();
    for (const p of this.#staging.values()) p.dispose();
  }

  #alive(): void {
    this.#host.alive();
    if (this.#disposed) throw new ExecutorError("disposed", "program used after dispose", { program: this.name });
  }
}

// A graph staged on Vulkan: compiled by graph-plan, every plan's kernel synthesized (kernelgen) and lowered to
// SPIR-V (codegen), buffers per root value, and the whole step recorded once per StateSet and resubmitted.

import { isPacked, numel, type Graph, type ValueId } from "@poot/graph-ir";
import type { KernelSource, Program } from "@poot/graph-plan";
import { importedLaunch, KernelgenError, synthesizeRequest, synthCapsFrom, type RequestKernel, type SynthCaps } from "@poot/kernelgen";
import { fallbackKernel } from "./fallback.js";
import { lowerSpirv } from "@poot/codegen";
import { ExecutorError, checkSlotData, elementBytes, schemaOf, viewLayout, viewRuns as runs, type OutputData, type ProgramSchema, type StagedProgram, type StateSet, type ViewLayout } from "@poot/executor";
import type { VulkanBuffer } from "../buffer.js";
import { invariant } from "../errors.js";
import { VulkanKernel, type BoundKernel } from "../kernel.js";
import { Recording, type Step, type StepTiming } from "../recording.js";
import { decodeDevice, deviceBytesOf, encodeHost } from "./storage.js";
import { VulkanStateSet } from "./state.js";
import type { VulkanExecutor } from "./executor.js";

/**
 * The kernel of one plan: an imported library kernel, or kernelgen's synthesizer; requests kernelgen declines
 * (an imported name it lacks, reductions over leading axes, batch-broadcast contractions) get a strided kernel.
 */
function kernelFor(src: Exclude<KernelSource, { provenance: "none" }>, caps: SynthCaps, name: string, fallbacks: string[]): RequestKernel {
  if (src.provenance === "imported") {
    try {
      return importedLaunch(src.name, src.metadata, caps) as RequestKernel;
    } catch (e) {
      // An unknown name, or a launch too wide for the device's grid: synthesize instead.
      if (!(e instanceof KernelgenError && (e.code === "unknown_kernel" || e.code === "exceeds_caps"))) throw e;
    }
  }
  try {
    return synthesizeRequest(src.request, caps, name);
  } catch (e) {
    if (!(e instanceof KernelgenError && (e.code === "bad_param" || e.code === "bad_shape"))) throw e;
    const k = fallbackKernel(src.request, caps, name);
    if (k === null) throw e;
    fallbacks.push(`${name}: ${e.message}`);
    return k;
  }
}

/** One launch of the staged step: a kernel, its buffers by kernel buffer name (root values), uniforms and grid. */
interface Launch {
  readonly kernel: VulkanKernel;
  readonly buffers: Readonly<Record<string, ValueId>>;
  readonly uniforms: Readonly<Record<string, number>>;
  readonly grid: readonly [number, number, number];
  readonly label: string;
  /** `"bind"`: runs once per weight binding (equations over weights only); `"step"`: every step. */
  readonly phase: "bind" | "step";
}

/** A staged program on a Vulkan device. */
export class VulkanProgram implements StagedProgram {
  readonly schema: ProgramSchema;
  private readonly graph: Graph;
  private readonly launches: Launch[] = [];
  private readonly rootOf: (id: ValueId) => ValueId;
  /** Program-owned buffers by root value: slots (host-visible), computed tables and transients (device). */
  private readonly owned = new Map<ValueId, VulkanBuffer>();
  private readonly slotRoots = new Map<string, ValueId>();
  private readonly written = new Set<string>();
  /** State copies at the end of the step: state_out values not computed in place. */
  private readonly stateCopies: { readonly key: string; readonly from: ValueId; readonly layout: ViewLayout }[] = [];
  private readonly recordings = new Map<StateSet | null, { recording: Recording; bound: BoundKernel[]; epoch: number }>();
  private lastState: VulkanStateSet | null = null;
  /** The weight epoch whose bind-phase launches have run (-1: none yet). */
  private preparedEpoch = -1;
  private captured: { state: StateSet | null } | null = null;
  private disposed = false;
  /** Plans served by a strided fallback kernel, with kernelgen's reason (empty when kernelgen served all). */
  readonly fallbacks: string[] = [];
  /** Bytes of program-owned buffers. */
  readonly ioBytes: number;

  constructor(
    private readonly exec: VulkanExecutor,
    readonly name: string,
    source: Graph,
    /** The compiled program. */
    readonly program: Program,
  ) {
    this.schema = schemaOf(source);
    const g = (this.graph = program.graph);
    const aliases = program.buffers().aliases;
    this.rootOf = (id) => aliases.get(id) ?? id;
    const device = exec.device;
    const synthCaps = synthCapsFrom(exec.target.caps as never);
    let io = 0;
    const own = (root: ValueId): void => {
      if (this.owned.has(root)) return;
      const v = g.values[root]!;
      const s = v.storage;
      if (s.kind === "const" || s.kind === "state") return;
      const bytes = deviceBytesOf(v.dtype, numel(v.shape));
      const buf = device.createBuffer(bytes, s.kind === "slot" ? "host" : "device", `${name} v${root}`);
      io += buf.bytes;
      this.owned.set(root, buf);
      if (s.kind === "computed") device.upload(buf, encodeHost(v.dtype, numel(v.shape), s.data));
      if (s.kind === "slot") this.slotRoots.set(s.key, root);
    };
    program.plans().forEach((plan, i) => {
      const src = plan.kernel;
      if (src.provenance === "none") return;
      const req = src.request;
      const rk = kernelFor(src, synthCaps, `p${i}_${plan.op.toLowerCase()}`, this.fallbacks);
      invariant(rk.bindings !== undefined, `plan ${i} (${plan.op}) has no bindings`);
      const buffers: Record<string, ValueId> = {};
      for (const { buffer, source: b } of rk.bindings) {
        const root = this.rootOf(b.kind === "output" ? req.output.root : req.inputs[b.index]!.root);
        own(root);
        buffers[buffer] = root;
      }
      const code = lowerSpirv(rk.kernel, device.caps);
      this.launches.push({ kernel: VulkanKernel.create(device, rk.kernel, code), buffers, uniforms: "uniforms" in rk ? (rk.uniforms as Record<string, number>) : {}, grid: [...rk.grid] as [number, number, number], label: `${plan.op} (${rk.kernel.name})`, phase: plan.phase });
    });
    for (const o of g.outputs) own(this.rootOf(o.value));
    for (const s of g.states) {
      const from = this.rootOf(s.output);
      if (from !== this.rootOf(s.input)) {
        own(from);
        // state_out may be a view (a slice of a concatenation): copy exactly the elements it covers.
        this.stateCopies.push({ key: s.key, from, layout: viewLayout(g, s.output, from) });
      }
    }
    this.ioBytes = io;
  }

  /** Kernel launches per step (what graph-plan's `Program.dispatchCount()` predicts). */
  get dispatchCount(): number {
    return this.stepLaunches().length;
  }

  /** Kernel launches run once per weight binding (graph-plan's `bindDispatchCount()`). */
  get bindDispatchCount(): number {
    return this.launches.length - this.dispatchCount;
  }

  private stepLaunches(): Launch[] {
    return this.launches.filter((l) => l.phase === "step");
  }

  /** Binds `launches` against `state` and records them, in order. */
  private bindAll(launches: readonly Launch[], state: VulkanStateSet | null): { bound: BoundKernel[]; steps: Step[] } {
    const bound = launches.map((l) => l.kernel.bind(Object.fromEntries(Object.entries(l.buffers).map(([k, root]) => [k, this.bufferOf(root, state)])), l.uniforms));
    return { bound, steps: launches.map((l, i) => ({ kind: "dispatch", kernel: bound[i]!, grid: l.grid, label: l.label })) };
  }

  /** Runs the bind-phase launches once per weight binding (their results live in program-owned buffers). */
  private prepare(): void {
    if (this.preparedEpoch === this.exec.weightEpoch) return;
    const launches = this.launches.filter((l) => l.phase === "bind");
    if (launches.length > 0) {
      const { bound, steps } = this.bindAll(launches, null);
      const r = Recording.record(this.exec.device, steps, { name: `${this.name} bind` });
      try {
        r.submit();
        this.exec.noteDispatches(launches.length);
      } finally {
        this.release({ recording: r, bound });
      }
    }
    this.preparedEpoch = this.exec.weightEpoch;
  }

  createState(): StateSet {
    this.alive();
    return this.exec.createState(this.schema, this.name);
  }

  writeSlot(key: string, data: ArrayLike<number>): void {
    this.alive();
    const spec = this.schema.slots.get(key);
    if (spec === undefined) throw new ExecutorError("unknown-slot", `no slot named ${key}`, { program: this.name, key });
    checkSlotData(spec, data, this.name);
    const root = this.slotRoots.get(key);
    // A slot the compiled step never reads (removed as dead) still counts as written.
    if (root !== undefined) this.owned.get(root)!.mapped().set(encodeHost(spec.dtype, spec.size, data));
    this.written.add(key);
  }

  /** The buffer of a root value for a step with `state`. */
  private bufferOf(root: ValueId, state: VulkanStateSet | null): VulkanBuffer {
    const v = this.graph.values[root]!;
    const s = v.storage;
    if (s.kind === "const") return this.exec.weightBuffer(s.key, v.dtype, v.shape, this.name);
    if (s.kind === "state") {
      invariant(state !== null, `state ${s.key} read without a StateSet`);
      return state.buffers.get(s.key)!;
    }
    const b = this.owned.get(root);
    invariant(b !== undefined, `value ${root} has no buffer`);
    return b;
  }

  private recordingFor(state: VulkanStateSet | null): Recording {
    const hit = this.recordings.get(state);
    if (hit !== undefined && hit.epoch === this.exec.weightEpoch) return hit.recording;
    if (hit !== undefined) this.release(hit);
    const { bound, steps } = this.bindAll(this.stepLaunches(), state);
    for (const c of this.stateCopies) {
      const spec = this.schema.states.get(c.key)!;
      const eb = elementBytes(spec.dtype);
      let at = 0;
      const regions = runs(c.layout).map(([off, n]) => {
        const r = { srcOffset: off * eb, dstOffset: at * eb, size: n * eb };
        at += n;
        return r;
      });
      invariant(at === spec.size, `state ${c.key}: copy covers ${at} of ${spec.size} elements`);
      steps.push({ kind: "copy", src: this.bufferOf(c.from, state), srcOffset: 0, dst: state!.buffers.get(c.key)!, dstOffset: 0, bytes: spec.size * eb, regions, label: `state ${c.key}` });
    }
    const recording = Recording.record(this.exec.device, steps, { timestamps: this.exec.timestamps, name: this.name });
    this.recordings.set(state, { recording, bound, epoch: this.exec.weightEpoch });
    return recording;
  }

  /** Frees a recording's command buffer and descriptor sets. */
  private release(r: { recording: Recording; bound: BoundKernel[] }): void {
    r.recording.dispose();
    for (const b of r.bound) b.dispose();
  }

  private checkRun(state: StateSet | undefined): VulkanStateSet | null {
    this.alive();
    for (const key of this.schema.slots.keys()) {
      if (!this.written.has(key)) throw new ExecutorError("slot-unwritten", "every slot must be written before the first run", { program: this.name, key });
    }
    if (this.schema.states.size > 0) {
      if (state === undefined) throw new ExecutorError("unknown-state", "the program has State: pass a StateSet from createState()", { program: this.name });
      if (!(state instanceof VulkanStateSet) || !this.exec.owns(state)) throw new ExecutorError("unknown-state", "the StateSet was not made by this executor", { program: this.name });
      for (const [key, s] of this.schema.states) {
        const t = state.schema.states.get(key);
        if (t === undefined || t.size !== s.size || t.dtype !== s.dtype) throw new ExecutorError("unknown-state", "the StateSet has another state layout", { program: this.name, key });
      }
      return state;
    }
    return null;
  }

  run(state?: StateSet): void {
    const st = this.checkRun(state);
    if (this.schema.consts.size > 0 && !this.exec.hasWeights) throw new ExecutorError("unbound-weights", "the program reads weights: call bindWeights first", { program: this.name });
    this.prepare();
    this.recordingFor(st).submit();
    this.exec.noteDispatches(this.dispatchCount);
    this.lastState = st;
  }

  readOutput(name: string, into?: OutputData): OutputData {
    this.alive();
    const spec = this.schema.outputs.get(name);
    if (spec === undefined) throw new ExecutorError("unknown-output", `no output named ${name}`, { program: this.name, key: name });
    const o = this.graph.outputs.find((x) => x.name === name)!;
    const root = this.rootOf(o.value);
    const v = this.graph.values[root]!;
    invariant(!isPacked(v.dtype), `output ${name} is stored packed`);
    const buf = this.bufferOf(root, this.lastState);
    const eb = elementBytes(spec.dtype);
    const parts = runs(viewLayout(this.graph, o.value, root));
    if (parts.length === 1 && parts[0]![1] === spec.size) return decodeDevice(spec.dtype, this.exec.device.download(buf, parts[0]![0] * eb, spec.size * eb), spec.size, into);
    // A strided output view: read the root once and gather its runs.
    const all = this.exec.device.download(buf);
    const packed = new Uint8Array(spec.size * eb);
    let at = 0;
    for (const [off, n] of parts) {
      packed.set(all.subarray(off * eb, (off + n) * eb), at);
      at += n * eb;
    }
    return decodeDevice(spec.dtype, packed, spec.size, into);
  }

  capture(state?: StateSet): boolean {
    const st = this.checkRun(state);
    this.recordingFor(st);
    this.captured = { state: st };
    return true;
  }

  replay(): void {
    this.alive();
    if (this.captured === null) throw new ExecutorError("not-captured", "replay() before capture()", { program: this.name });
    this.run(this.captured.state ?? undefined);
  }

  /** Per-dispatch times of the last step with `state` (null without timestamps). */
  timings(state?: StateSet): StepTiming[] | null {
    return this.recordings.get((state as VulkanStateSet | undefined) ?? null)?.recording.timings() ?? null;
  }

  /** Forgets recordings that reference a disposed StateSet. */
  dropState(state: StateSet): void {
    const r = this.recordings.get(state);
    if (r !== undefined) this.release(r);
    this.recordings.delete(state);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const r of this.recordings.values()) this.release(r);
    this.recordings.clear();
    if (this.exec.device.alive) for (const b of this.owned.values()) b.dispose();
    this.exec.forget(this);
  }

  private alive(): void {
    if (this.disposed) throw new ExecutorError("disposed", "the program was disposed", { program: this.name });
    this.exec.alive();
  }
}

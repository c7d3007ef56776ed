// A graph staged on WebGPU: compiled by graph-plan for the device's caps, each plan's kernel synthesized or
// imported by kernelgen and lowered to WGSL by codegen, bound once per StateSet and replayed as one Step.

import type { TargetCode } from "@poot/codegen";
import {
  ExecutorError,
  outputOf,
  storageOf,
  checkSlotData,
  elementBytes,
  viewLayout as rootLayout,
  viewRuns,
  type OutputData,
  type ProgramSchema,
} from "@poot/executor";
import { numel, storageBytes, type Eqn, type Graph, type Value } from "@poot/graph-ir";
import { compile, makeTarget, type CompileOptions, type Plan, type Program } from "@poot/graph-plan";
import type { Kernel } from "@poot/kernel-dsl";
import { KernelgenError, planKernel, synthCapsFrom, type BindingSource } from "@poot/kernelgen";
import type { BoundKernel, KernelArg, PackCopy } from "../bind.js";
import { pad4, type WgpuBuffer } from "../buffers.js";
import { codegenCaps, planCaps } from "../caps.js";
import type { WgpuContext } from "../context.js";
import { WgpuError } from "../errors.js";
import type { Step } from "../step.js";
import { lowerForWgpu } from "./lower.js";
import { isDensePrefix, producersOf, viewCopyKernel, viewLayout } from "./views.js";
import type { WgpuStateSet } from "./state.js";

/** What the program needs from its executor. */
export interface ProgramHost {
  readonly ctx: WgpuContext;
  /** The device buffer of a weight (read from the bound source on first use); `unbound-weights` before bindWeights. */
  weight(key: string, value: Value, program: string): Promise<WgpuBuffer>;
  /** Bumped by every bindWeights: steps bound to older weight buffers are rebuilt. */
  readonly weightsEpoch: number;
  /** Makes a StateSet for `schema`. */
  createState(schema: ProgramSchema, program: string): Promise<WgpuStateSet>;
  /** Whether `s` is a live StateSet of this executor. */
  ownsState(s: WgpuStateSet): boolean;
  /** Throws `disposed` after the executor's dispose. */
  alive(): void;
}

/** One plan's kernel, lowered once at stage time. */
interface Lowered {
  readonly plan: Plan;
  readonly kernel: Kernel;
  readonly code: TargetCode;
  readonly grid: readonly [number, number, number];
  readonly uniforms: Readonly<Record<string, number>>;
  readonly bindings: readonly { readonly buffer: string; readonly source: BindingSource }[];
  /** Why an imported plan was synthesized instead, when it was. */
  readonly fallback?: string;
}

/** A graph staged on one WebGPU device: the async twin of `@poot/executor`'s `StagedProgram`. */
export class WgpuProgram {
  /** Its name. */
  readonly name: string;
  /** Slots, states and outputs with their types. */
  readonly schema: ProgramSchema;
  /** The compiled program (plans, kernel provenance, dispatch counts). */
  readonly program: Program;
  readonly #host: ProgramHost;
  readonly #lowered: readonly Lowered[];
  readonly #slots = new Map<string, WgpuBuffer>();
  readonly #written = new Set<string>();
  readonly #owned = new Map<number, WgpuBuffer>();
  // Copies of in-place operands, one per binding that needs it.
  readonly #snapshots: WgpuBuffer[] = [];
  readonly #steps = new Map<
    WgpuStateSet | null,
    { step: Step; kernels: BoundKernel[]; epoch: number; outputs: Map<string, WgpuBuffer> }
  >();
  #prepared = -1;
  #producers: Map<number, Eqn> | undefined;
  #last: WgpuStateSet | null = null;
  #captured: { state: WgpuStateSet | null } | null = null;
  #disposed = false;

  readonly #ident: string;

  private constructor(
    host: ProgramHost,
    name: string,
    schema: ProgramSchema,
    program: Program,
    lowered: Lowered[],
    ident: string,
  ) {
    this.#host = host;
    this.#ident = ident;
    this.name = name;
    this.schema = schema;
    this.program = program;
    this.#lowered = lowered;
  }

  /** Compiles `graph` for the device and lowers every plan's kernel; buffers are made here, bind groups at first run. */
  static async stage(
    host: ProgramHost,
    graph: Graph,
    schema: ProgramSchema,
    name: string,
    options: CompileOptions = {},
  ): Promise<WgpuProgram> {
    const caps = host.ctx.caps;
    const plan = planCaps(caps);
    const program = compile(graph, makeTarget({ kind: "wgpu", caps: plan }), options);
    const synth = synthCapsFrom(plan),
      lower = codegenCaps(caps);
    const lowered: Lowered[] = [];
    // Kernel names must be identifiers (they become WGSL entry points).
    const ident = name.replace(/[^A-Za-z0-9_]/g, "_").replace(/^(?=[0-9])/, "k");
    program.plans().forEach((p, i) => {
      const src = p.kernel;
      if (src.provenance === "none") return;
      let k;
      try {
        k = planKernel(src, synth, `${ident}_p${i}_${p.op.toLowerCase()}`);
      } catch (e) {
        if (!(e instanceof KernelgenError)) throw e;
        throw new WgpuError(
          "unsupported-kernel",
          `plan ${i} (${p.op}, ${src.request.kind}, eqn ${p.eqn}) of ${name}: ${e.message}`,
          { operation: "stage", kernel: p.op, eqn: p.eqn },
        );
      }
      lowered.push({
        plan: p,
        kernel: k.kernel,
        code: lowerForWgpu(k.kernel, lower),
        grid: k.grid,
        uniforms: k.uniforms,
        bindings: k.bindings,
        ...(k.fallback !== undefined ? { fallback: k.fallback } : {}),
      });
    });
    const prog = new WgpuProgram(host, name, schema, program, lowered, ident);
    for (const s of schema.slots.values())
      prog.#slots.set(
        s.key,
        await host.ctx.buffers.create("slot", s.size * elementBytes(s.dtype), `${name} slot ${s.key}`),
      );
    return prog;
  }

  #root(id: number): number {
    return this.program.buffers().aliases.get(id) ?? id;
  }

  /** The buffer holding root value `root` for a run against `state`. */
  async #buffer(root: number, state: WgpuStateSet | null): Promise<WgpuBuffer> {
    const v = this.program.graph.values[root] as Value;
    const s = v.storage;
    switch (s.kind) {
      case "const":
        return this.#host.weight(s.key, v, this.name);
      case "slot":
        return this.#slots.get(s.key)!;
      case "state":
        if (state === null)
          throw new ExecutorError("unknown-state", "the program has state: pass a StateSet from createState()", {
            program: this.name,
          });
        return state.buffer(s.key);
      case "computed":
      case "device": {
        let b = this.#owned.get(root);
        if (b === undefined) {
          const n = numel(v.shape);
          b = await this.#host.ctx.buffers.create(
            s.kind === "computed" ? "weight" : "io",
            storageBytes(v.dtype, n),
            `${this.name} v${root}`,
          );
          if (s.kind === "computed") b.write(storageOf(v.dtype, n, s.data));
          this.#owned.set(root, b);
        }
        return b;
      }
      default:
        return s satisfies never;
    }
  }

  /** Binds the plans of `phase` against `state`; an operand that is also the output is read from a snapshot. */
  async #bind(phase: "step" | "bind", state: WgpuStateSet | null): Promise<BoundKernel[]> {
    const out: BoundKernel[] = [];
    for (const l of this.#lowered) {
      if (l.plan.phase !== phase) continue;
      const req = l.plan.kernel.provenance === "none" ? null : l.plan.kernel.request;
      if (req === null) continue;
      const outRoot = this.#root(req.output.root);
      const args: Record<string, KernelArg> = {};
      const before: PackCopy[] = [];
      for (const { buffer, source } of l.bindings) {
        const root = source.kind === "output" ? outRoot : this.#root(req.inputs[source.index]!.root);
        let b = await this.#buffer(root, state);
        // WebGPU forbids a buffer bound writable and read in one dispatch: read an in-place operand from a copy.
        if (source.kind === "input" && root === outRoot) {
          const snap = await this.#host.ctx.buffers.create("io", b.bytes, `${this.name} snapshot v${root}`);
          this.#snapshots.push(snap);
          before.push({ from: b.gpu, fromOffset: 0, to: snap.gpu, toOffset: 0, bytes: pad4(b.bytes) });
          b = snap;
        }
        args[buffer] = { buffer: b, changes: true };
      }
      out.push(
        await this.#host.ctx.bind({ kernel: l.kernel, code: l.code, grid: l.grid, args, uniforms: l.uniforms, before }),
      );
    }
    return out;
  }

  async #stepFor(state: WgpuStateSet | null): Promise<Step> {
    const epoch = this.#host.weightsEpoch;
    if (this.#prepared !== epoch) {
      // Bind-phase plans (equations over weights only) run once per weight binding.
      const prep = await this.#bind("bind", null);
      if (prep.length > 0) await this.#host.ctx.step(prep, { label: `${this.name} bind` }).submit();
      this.#prepared = epoch;
    }
    const have = this.#steps.get(state);
    if (have !== undefined && have.epoch === epoch) return have.step;
    const kernels = await this.#bind("step", state);
    // A state_out computed elsewhere than in place is copied into its State buffer after the step (donation).
    const after: PackCopy[] = [];
    for (const s of this.program.graph.states) {
      const from = this.#root(s.output),
        to = this.#root(s.input);
      if (from === to) continue;
      const dst = await this.#buffer(to, state);
      // A strided state_out (a slice of a concatenation) goes in by its contiguous runs: copies, not a kernel.
      const runs = this.#copyRuns(s.output, from);
      if (runs !== null) {
        const src = await this.#buffer(from, state);
        for (const [at, to, bytes] of runs)
          after.push({ from: src.gpu, fromOffset: at, to: dst.gpu, toOffset: to, bytes });
        continue;
      }
      const src = await this.#dense(s.output, state, kernels);
      after.push({ from: src.gpu, fromOffset: 0, to: dst.gpu, toOffset: 0, bytes: pad4(dst.bytes) });
    }
    const outputs = new Map<string, WgpuBuffer>();
    for (const o of this.program.graph.outputs) outputs.set(o.name, await this.#dense(o.value, state, kernels));
    const step = this.#host.ctx.step(kernels, { label: this.name, after });
    this.#steps.set(state, { step, kernels, epoch, outputs });
    return step;
  }

  /**
   * The byte runs [source offset, destination offset, bytes] that copy view `v` of root `root` densely, or null when
   * a run is not 4-byte aligned (WebGPU's copy rule: 16-bit values at odd offsets) or there are over 256 runs
   * (then one copy kernel costs less host time than the copy commands).
   */
  #copyRuns(v: number, root: number): [number, number, number][] | null {
    const val = this.program.graph.values[v] as Value;
    const eb = storageBytes(val.dtype, 2) / 2;
    const runs = viewRuns(rootLayout(this.program.graph, v, root));
    if (runs.length > 256) return null;
    const out: [number, number, number][] = [];
    let at = 0;
    for (const [off, n] of runs) {
      if ((off * eb) % 4 !== 0 || (n * eb) % 4 !== 0) return null;
      out.push([off * eb, at * eb, n * eb]);
      at += n;
    }
    return out;
  }

  /** A buffer holding value `v` densely: its root's, or a copy made by a kernel appended to `kernels` when `v` is a strided view. */
  async #dense(v: number, state: WgpuStateSet | null, kernels: BoundKernel[]): Promise<WgpuBuffer> {
    const g = this.program.graph;
    const root = this.#root(v);
    if (root === v) return this.#buffer(root, state);
    const l = viewLayout(g, v, (this.#producers ??= producersOf(g)));
    if (l.root !== root)
      throw new WgpuError(
        "internal",
        `value ${v} of ${this.name}: its view chain ends at ${l.root}, graph-plan aliases it to ${root}`,
        { operation: "stage" },
      );
    if (isDensePrefix(g, v, l)) return this.#buffer(root, state);
    const val = g.values[v] as Value;
    let dense = this.#owned.get(v);
    if (dense === undefined) {
      dense = await this.#host.ctx.buffers.create(
        "io",
        storageBytes(val.dtype, numel(val.shape)),
        `${this.name} dense v${v}`,
      );
      this.#owned.set(v, dense);
    }
    const k = viewCopyKernel(g, v, l, synthCapsFrom(planCaps(this.#host.ctx.caps)), `${this.#ident}_view${v}`);
    kernels.push(
      await this.#host.ctx.bind({
        kernel: k.kernel,
        code: lowerForWgpu(k.kernel, codegenCaps(this.#host.ctx.caps)),
        grid: k.grid,
        args: { x: { buffer: await this.#buffer(root, state) }, y: { buffer: dense } },
      }),
    );
    return dense;
  }

  /** A zeroed StateSet with this program's state layout. */
  createState(): Promise<WgpuStateSet> {
    this.#alive();
    return this.#host.createState(this.schema, this.name);
  }

  /** Writes one slot (checked against the schema). */
  writeSlot(key: string, data: ArrayLike<number>): void {
    this.#alive();
    const spec = this.schema.slots.get(key);
    if (spec === undefined)
      throw new ExecutorError(
        "unknown-slot",
        `no slot "${key}" (slots: ${[...this.schema.slots.keys()].join(", ") || "none"})`,
        { program: this.name, key },
      );
    checkSlotData(spec, data, this.name);
    this.#slots.get(key)!.write(storageOf(spec.dtype, spec.size, data));
    this.#written.add(key);
  }

  #checkState(state: WgpuStateSet | undefined): WgpuStateSet | null {
    if (this.schema.states.size === 0) return null;
    if (state === undefined)
      throw new ExecutorError(
        "unknown-state",
        `the program has ${this.schema.states.size} state(s): pass a StateSet from createState()`,
        { program: this.name },
      );
    if (!this.#host.ownsState(state))
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

  /** Runs one step with the written slots; State is read and left in `state` (donated). */
  async run(state?: WgpuStateSet): Promise<void> {
    this.#alive();
    for (const key of this.schema.slots.keys()) {
      if (!this.#written.has(key))
        throw new ExecutorError("slot-unwritten", "slot was never written", { program: this.name, key });
    }
    const st = this.#checkState(state);
    await (await this.#stepFor(st)).submit();
    this.#last = st;
  }

  /** Copies an output to the host (f16/bf16 widened to f32). */
  async readOutput(name: string, into?: OutputData): Promise<OutputData> {
    this.#alive();
    const spec = this.schema.outputs.get(name);
    if (spec === undefined)
      throw new ExecutorError(
        "unknown-output",
        `no output "${name}" (outputs: ${[...this.schema.outputs.keys()].join(", ")})`,
        { program: this.name, key: name },
      );
    const o = this.program.graph.outputs.find((x) => x.name === name)!;
    const buf = this.#steps.get(this.#last)?.outputs.get(name) ?? (await this.#buffer(this.#root(o.value), this.#last));
    return outputOf(spec.dtype, await buf.read(0, storageBytes(spec.dtype, spec.size)), spec.size, into);
  }

  /** Binds the step for `state` so {@link replay} repeats it with the slots' values at replay time. */
  async capture(state?: WgpuStateSet): Promise<boolean> {
    this.#alive();
    const st = this.#checkState(state);
    await this.#stepFor(st);
    this.#captured = { state: st };
    return true;
  }

  /** Replays the captured step against the StateSet it was captured with. */
  async replay(): Promise<void> {
    this.#alive();
    if (this.#captured === null)
      throw new ExecutorError("not-captured", "replay before capture", { program: this.name });
    await (await this.#stepFor(this.#captured.state)).submit();
    this.#last = this.#captured.state;
  }

  /** Kernel dispatches per step. */
  dispatchesPerStep(): number {
    return this.#lowered.filter((l) => l.plan.phase === "step").length;
  }

  /** Bytes of slots and program-owned buffers (transients, computed constants, snapshots). */
  ioBytes(): number {
    if (this.#disposed) return 0;
    let n = 0;
    for (const b of this.#slots.values()) n += b.bytes;
    for (const b of [...this.#owned.values(), ...this.#snapshots]) n += b.bytes;
    return n;
  }

  /** Frees the program's buffers. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const s of this.#steps.values()) {
      s.step.dispose();
      for (const k of s.kernels) k.dispose();
    }
    for (const b of [...this.#slots.values(), ...this.#owned.values(), ...this.#snapshots]) b.destroy();
  }

  #alive(): void {
    this.#host.alive();
    if (this.#disposed) throw new ExecutorError("disposed", "program used after dispose", { program: this.name });
  }
}

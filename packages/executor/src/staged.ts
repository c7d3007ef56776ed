// The one staged program: any LoweredProgram on any Device. Weights are uploaded lazily, once per executor, and
// shared by every program; a program owns its slots, transients, prepared values and scratch; a step is recorded
// once per StateSet (and once more for replay) and resubmitted. Every backend's executor is this over its Device.

import { dtypeName, type ScalarDType } from "@poot/graph-ir";
import type {
  DeviceBytes,
  Executor,
  OutputData,
  StageInput,
  StageOptions,
  StagedProgram,
  StateSet,
  WeightSource,
} from "./contract.js";
import type { Device, DeviceBuffer, DeviceOp } from "./device.js";
import { ExecutorError } from "./errors.js";
import { checkStateFor, loadHost, storeHost, type HostBuffer } from "./host-state.js";
import type { ByteRegion, LoweredBuffer, LoweredProgram } from "./lowering/types.js";
import { checkSlotData, readWeight, type OutputSpec, type ProgramSchema } from "./schema.js";
import { gatherOutput, outputSpan } from "./regions.js";
import { DeviceStateSet } from "./staged-state.js";
import { outputOf, storageOf } from "./storage.js";

/** One launch of a profiled step ({@link DeviceProgram.profile}). */
export interface KernelTiming {
  /** The plan's op and equation id in the compiled graph. */
  readonly op: string;
  readonly eqn: number;
  /** The kernel's entry point. */
  readonly kernel: string;
  readonly grid: readonly [number, number, number];
  /** Bytes of the buffers the launch binds (weights dominate a GEMV). */
  readonly bytes: number;
  /** Device microseconds of the launch. */
  readonly us: number;
}

/** Lowers a stage input for the device (through the cache, when the caller has one). */
export type Lower = (input: StageInput, name: string) => LoweredProgram;

/** The generic executor over one device. */
export class DeviceExecutor<B extends DeviceBuffer = DeviceBuffer, K = unknown, L = unknown, R = unknown>
  implements Executor
{
  readonly caps: Device["caps"];
  readonly #weights = new Map<string, B>();
  readonly #programs = new Set<DeviceProgram<B, K, L, R>>();
  /** @internal Live StateSets. */
  readonly states = new Set<DeviceStateSet<B>>();
  #source: WeightSource | null = null;
  #weightBytes = 0;
  #dispatched = 0;
  #disposed = false;
  /** Bumped by every bindWeights: steps recorded against older weight buffers are recorded again. */
  epoch = 0;

  /** @param device - the device (disposed with the executor); @param lower - how a stage input is lowered for it. */
  constructor(
    readonly device: Device<B, K, L, R>,
    readonly lower: Lower,
  ) {
    this.caps = device.caps;
  }

  bindWeights(source: WeightSource): void {
    this.alive();
    this.device.sync();
    this.#source = source;
    for (const w of this.#weights.values()) this.device.free(w);
    this.#weights.clear();
    this.#weightBytes = 0;
    this.epoch++;
  }

  /**
   * Frees the device buffers of these weights (keys not held are ignored); the next step that needs one uploads it
   * from the bound source again. Programs whose steps bind a freed weight record those steps again; prepared
   * (bind-phase) values stay, being derived from the same weight values. Returns the bytes freed.
   */
  releaseWeights(keys: Iterable<string>): number {
    this.alive();
    const gone = new Set<string>();
    let bytes = 0;
    for (const key of keys) {
      const w = this.#weights.get(key);
      if (w === undefined) continue;
      if (gone.size === 0) this.device.sync();
      this.device.free(w);
      this.#weights.delete(key);
      gone.add(key);
      bytes += w.bytes;
    }
    this.#weightBytes -= bytes;
    if (gone.size > 0) for (const p of this.#programs) p.weightsReleased(gone);
    return bytes;
  }

  /** @internal Whether weights were bound. */
  get bound(): boolean {
    return this.#source !== null;
  }

  /** @internal The buffer of one weight, uploaded from the source the first time a program needs it. */
  weight(b: LoweredBuffer, program: string): B {
    const have = this.#weights.get(b.key!);
    if (have !== undefined) return have;
    const type = { dtype: b.dtype, shape: b.shape };
    const file = this.device.mapWeight !== undefined ? this.#source?.locate?.(b.key!, type, b.bytes) : undefined;
    const mapped = file !== undefined ? this.device.mapWeight!(b.bytes, file) : null;
    if (mapped !== null) return this.#bound(b, mapped);
    const w = this.device.allocate(b.bytes, "weight", `weight ${b.key}`);
    // Host-visible memory is read into in place when the source can (one file read, no host copy).
    const into = this.#source?.into,
      view = into !== undefined ? this.device.hostView?.(w, 0, "u8", b.bytes) : undefined;
    if (view === undefined || !into!(b.key!, type, view as Uint8Array)) {
      const data = readWeight(this.#source, b.key!, type, program);
      this.device.upload(w, storageOf(b.dtype, data.length, data));
    }
    return this.#bound(b, w);
  }

  #bound(b: LoweredBuffer, w: B): B {
    this.#weights.set(b.key!, w);
    this.#weightBytes += b.bytes;
    return w;
  }

  stage(input: StageInput, options: StageOptions = {}): DeviceProgram<B, K, L, R> {
    this.alive();
    const name = options.name ?? "program";
    const lowered = this.lower(input, name);
    const s = lowered.schema;
    for (const x of [...s.slots.values(), ...s.states.values(), ...s.outputs.values()]) {
      if (!this.caps.dtypes.includes(x.dtype))
        throw new ExecutorError(
          "unsupported-dtype",
          `dtype ${dtypeName(x.dtype)} is not held by the ${this.caps.kind} executor`,
          { program: name, key: "key" in x ? x.key : x.name },
        );
    }
    const p = this.createProgram(lowered);
    this.#programs.add(p);
    return p;
  }

  /** Makes the staged program of a lowered one (a backend may return its subclass of {@link DeviceProgram}). */
  protected createProgram(lowered: LoweredProgram): DeviceProgram<B, K, L, R> {
    return new DeviceProgram(this, lowered);
  }

  /** @internal Makes a StateSet for `schema`. */
  createState(schema: ProgramSchema, program: string): DeviceStateSet<B> {
    const s = new DeviceStateSet(this.device, schema, program, (gone) => {
      this.states.delete(gone);
      for (const p of this.#programs) p.dropState(gone);
    });
    this.states.add(s);
    return s;
  }

  /** @internal Counts launches submitted. */
  noteDispatches(n: number): void {
    this.#dispatched += n;
  }

  /** Kernel launches submitted so far by every program (steps, replays, bind-time preparation). */
  dispatchesSubmitted(): number {
    return this.#dispatched;
  }

  /** @internal Forgets a disposed program. */
  forget(p: DeviceProgram<B, K, L, R>): void {
    this.#programs.delete(p);
  }

  /** Device memory free now (the device's query), or `caps.deviceMemoryBytes` less what this executor holds. */
  freeMemoryBytes(): number {
    const q = this.device.freeMemoryBytes?.();
    if (q !== undefined) return q;
    const total = this.caps.deviceMemoryBytes;
    return total === null ? Number.POSITIVE_INFINITY : Math.max(0, total - this.deviceBytes().total);
  }

  deviceBytes(): DeviceBytes {
    let state = 0,
      io = 0;
    for (const s of this.states) state += s.bytes;
    for (const p of this.#programs) io += p.ioBytes();
    return { weights: this.#weightBytes, state, io, total: this.#weightBytes + state + io };
  }

  dispose(): void {
    if (this.#disposed) return;
    for (const p of [...this.#programs]) p.dispose();
    for (const s of [...this.states]) s.dispose();
    for (const w of this.#weights.values()) this.device.free(w);
    this.#weights.clear();
    this.#disposed = true;
    this.device.dispose();
  }

  /** @internal Throws `disposed` after dispose. */
  alive(): void {
    if (this.#disposed) throw new ExecutorError("disposed", "executor used after dispose");
  }
}

/** A step recorded against one StateSet, with the launches it bound. */
interface Recorded<L, R> {
  readonly recording: R;
  readonly launches: readonly L[];
  readonly epoch: number;
}

/** A LoweredProgram staged on a device (`@poot/executor`'s StagedProgram). */
export class DeviceProgram<B extends DeviceBuffer = DeviceBuffer, K = unknown, L = unknown, R = unknown>
  implements StagedProgram
{
  readonly name: string;
  readonly schema: ProgramSchema;
  readonly #exec: DeviceExecutor<B, K, L, R>;
  readonly #device: Device<B, K, L, R>;
  readonly #kernels: K[];
  readonly #byId: ReadonlyMap<number, LoweredBuffer>;
  /** Program-owned buffers by id: slots, computed constants, prepared values, transients, scratch. */
  readonly #owned = new Map<number, B>();
  /** Buffers the owned slices lie in (the transients' arena, the shared scratch), with `Device.slice`. */
  readonly #arenas: B[] = [];
  /** Ids of owned buffers that are slices of an arena (neither freed nor counted on their own). */
  readonly #sliced = new Set<number>();
  /** Host views of slots and outputs, with `Device.hostView` (made once, so steps allocate nothing). */
  readonly #slotViews = new Map<string, { readonly buffer: B; readonly view: HostBuffer }>();
  readonly #outputViews = new Map<string, { readonly buffer: B; readonly view: HostBuffer }>();
  #perStep = -1;
  readonly #snapshots: B[] = [];
  readonly #slots = new Map<string, B>();
  readonly #written = new Set<string>();
  readonly #steps = new Map<StateSet | null, Recorded<L, R>>();
  #captured: { state: DeviceStateSet<B> | null; rec: Recorded<L, R> } | null = null;
  #prepared = -1;
  /** Bumped when a weight one of its step launches binds is released: its recorded steps are recorded again. */
  #rebinds = 0;
  #last: DeviceStateSet<B> | null = null;
  #disposed = false;

  constructor(
    exec: DeviceExecutor<B, K, L, R>,
    /** What runs. */ readonly lowered: LoweredProgram,
  ) {
    this.#exec = exec;
    this.#device = exec.device;
    this.name = lowered.name;
    this.schema = lowered.schema;
    this.#byId = new Map(lowered.buffers.map((b) => [b.id, b]));
    this.#kernels = lowered.kernels.map((k) => this.#device.load(k));
    // Where the device can slice a buffer: transients at their arena offsets, every scratch area in one buffer.
    const d = this.#device;
    const arena = (bytes: number, kind: "transient" | "scratch"): B | null => {
      if (d.slice === undefined || bytes === 0) return null;
      const a = d.allocate(bytes, kind, `${this.name} ${kind} arena`);
      this.#arenas.push(a);
      return a;
    };
    const transients = arena(lowered.arenaBytes, "transient");
    const scratch = arena(
      Math.max(0, ...lowered.buffers.filter((b) => b.kind === "scratch").map((b) => b.bytes)),
      "scratch",
    );
    for (const b of lowered.buffers) {
      if (b.kind === "weight" || b.kind === "state") continue;
      const within =
        b.kind === "transient" && b.offset !== undefined ? transients : b.kind === "scratch" ? scratch : null;
      if (within !== null) {
        this.#owned.set(b.id, d.slice!(within, b.kind === "scratch" ? 0 : b.offset!, b.bytes));
        this.#sliced.add(b.id);
        continue;
      }
      const buf = this.#device.allocate(Math.max(4, b.bytes), b.kind, `${this.name} ${b.key ?? `v${b.id}`}`);
      if (b.kind === "computed") this.#device.upload(buf, b.data!);
      if (b.kind === "slot") this.#slots.set(b.key!, buf);
      this.#owned.set(b.id, buf);
    }
  }

  /** The recorded step for `state` (undefined before its first run), for device-specific inspection (timings). */
  recordingOf(state?: StateSet): R | undefined {
    return this.#steps.get(state ?? null)?.recording;
  }

  /**
   * Runs one step with a device timer around each launch and returns each launch's time (for finding the slow
   * kernels of a step); null when the device has no timers.
   */
  profile(state?: StateSet): KernelTiming[] | null {
    const st = this.#check(state);
    if (this.#device.time === undefined) return null;
    this.#prepare();
    const { ops, launches } = this.#ops("step", st);
    const us = this.#device.time(ops);
    for (const l of launches) this.#device.unbind(l);
    this.#last = st;
    const step = this.lowered.launches.filter((l) => l.phase === "step");
    const times = ops.flatMap((op, i) => (op.kind === "launch" ? [us[i]!] : []));
    return step.map((l, i) => ({
      op: l.op,
      eqn: l.eqn,
      kernel: this.lowered.kernels[l.kernel]!.code.entryPoint,
      grid: l.grid,
      bytes: Object.values(l.args).reduce((a, x) => a + this.#byId.get(x.buffer)!.bytes, 0),
      us: times[i]!,
    }));
  }

  /**
   * The step recorded against `state` (recorded now if it was not, or was recorded against older weights), for
   * device loops that replay a step's operations without its slot copies (decision 2201). Valid until the next
   * `bindWeights` or the state's disposal: compare identities to notice a new one.
   */
  recordedStep(state?: StateSet): R {
    return this.#stepFor(this.#check(state)).recording;
  }

  /** The device buffer of lowered buffer `id` (a slot, output, weight or `state`'s), for device loops (decision 2201). */
  bufferOf(id: number, state?: StateSet): B {
    this.#alive();
    return this.#buffer(id, this.#checkState(state));
  }

  /** Kernel launches per step (what the lowering predicts and `dispatchesSubmitted` counts). */
  dispatchesPerStep(): number {
    if (this.#perStep < 0) this.#perStep = this.lowered.launches.filter((l) => l.phase === "step").length;
    return this.#perStep;
  }

  #buffer(id: number, state: DeviceStateSet<B> | null): B {
    const b = this.#byId.get(id)!;
    if (b.kind === "weight") return this.#exec.weight(b, this.name);
    if (b.kind === "state") {
      if (state === null)
        throw new ExecutorError("unknown-state", "the program has state: pass a StateSet from createState()", {
          program: this.name,
        });
      return state.buffer(b.key!);
    }
    return this.#owned.get(id)!;
  }

  /** The operations of `phase` against `state`: snapshot copies and launches, then (steps) the State copies. */
  #ops(phase: "step" | "bind", state: DeviceStateSet<B> | null): { ops: DeviceOp<B, L>[]; launches: L[] } {
    const ops: DeviceOp<B, L>[] = [],
      launches: L[] = [];
    if (phase === "step") for (const b of this.#slots.values()) ops.push({ kind: "slot-in", buffer: b });
    for (const l of this.lowered.launches) {
      if (l.phase !== phase) continue;
      const buffers: Record<string, B> = {};
      for (const [arg, a] of Object.entries(l.args)) {
        let b = this.#buffer(a.buffer, state);
        if (a.offset !== undefined) {
          if (this.#device.slice === undefined)
            throw new ExecutorError(
              "unsupported-program",
              `the ${this.caps.kind} device cannot bind part of a buffer`,
              {
                program: this.name,
              },
            );
          b = this.#device.slice(b, a.offset, b.bytes - a.offset);
        }
        // An operand that is also the output is read from a copy taken before the kernel (no cross-block races).
        if (a.snapshot === true) {
          const snap = this.#device.allocate(b.bytes, "snapshot", `${this.name} snapshot`);
          this.#snapshots.push(snap);
          ops.push({
            kind: "copy",
            from: b,
            to: snap,
            regions: [{ srcOffset: 0, dstOffset: 0, bytes: b.bytes }],
            label: `snapshot ${arg}`,
          });
          b = snap;
        }
        buffers[arg] = b;
      }
      const launch = this.#device.bind(this.#kernels[l.kernel]!, buffers, l.uniforms);
      launches.push(launch);
      ops.push({
        kind: "launch",
        launch,
        grid: l.grid,
        label: `${l.op} (${this.lowered.kernels[l.kernel]!.name})`,
        plan: { op: l.op, request: l.request },
      });
    }
    if (phase === "step") {
      for (const c of this.lowered.stateCopies)
        ops.push({
          kind: "copy",
          from: this.#buffer(c.from, state),
          to: this.#buffer(c.to, state),
          regions: c.regions,
          label: `state ${c.key}`,
        });
    }
    return { ops, launches };
  }

  /** Runs the bind-phase launches once per weight binding (their results live in program-owned buffers). */
  #prepare(): void {
    if (this.#prepared === this.#exec.epoch) return;
    const { ops, launches } = this.#ops("bind", null);
    if (launches.length > 0) {
      const r = this.#device.record(ops, { name: `${this.name} bind`, replay: false });
      this.#device.submit(r);
      this.#device.sync();
      this.#device.release(r);
      for (const l of launches) this.#device.unbind(l);
      this.#exec.noteDispatches(launches.length);
    }
    this.#prepared = this.#exec.epoch;
  }

  /** The weights its recorded steps were bound to: new bindings and released weights change it. */
  #epoch(): number {
    return this.#exec.epoch + this.#rebinds;
  }

  /** @internal Notes weights the executor released: steps that bind one of them are recorded again. */
  weightsReleased(keys: ReadonlySet<string>): void {
    const binds = this.lowered.launches.some(
      (l) =>
        l.phase === "step" &&
        Object.values(l.args).some((a) => {
          const b = this.#byId.get(a.buffer)!;
          return b.kind === "weight" && keys.has(b.key!);
        }),
    );
    if (binds) this.#rebinds++;
  }

  #record(state: DeviceStateSet<B> | null, replay: boolean): Recorded<L, R> {
    const { ops, launches } = this.#ops("step", state);
    return { recording: this.#device.record(ops, { name: this.name, replay }), launches, epoch: this.#epoch() };
  }

  #release(r: Recorded<L, R>): void {
    this.#device.release(r.recording);
    for (const l of r.launches) this.#device.unbind(l);
  }

  #stepFor(state: DeviceStateSet<B> | null): Recorded<L, R> {
    this.#prepare();
    const have = this.#steps.get(state);
    if (have !== undefined && have.epoch === this.#epoch()) return have;
    if (have !== undefined) this.#release(have);
    const r = this.#record(state, false);
    this.#steps.set(state, r);
    return r;
  }

  createState(): DeviceStateSet<B> {
    this.#alive();
    return this.#exec.createState(this.schema, this.name);
  }

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
    // A slot the compiled step never reads (removed as dead) still counts as written.
    const b = this.#slots.get(key);
    const view = b === undefined ? undefined : this.#view(this.#slotViews, key, b, 0, spec.dtype, spec.size);
    if (view !== undefined) {
      if ((spec.dtype === "f16" || spec.dtype === "bf16") && data instanceof Uint16Array) view.set(data);
      else storeHost(spec.dtype, view, data);
    } else if (b !== undefined) this.#device.upload(b, storageOf(spec.dtype, spec.size, data));
    this.#written.add(key);
  }

  #check(state: StateSet | undefined): DeviceStateSet<B> | null {
    this.#alive();
    for (const key of this.schema.slots.keys()) {
      if (!this.#written.has(key))
        throw new ExecutorError("slot-unwritten", "slot was never written", { program: this.name, key });
    }
    const st = this.#checkState(state);
    if (this.lowered.buffers.some((b) => b.kind === "weight") && !this.#exec.bound)
      throw new ExecutorError("unbound-weights", "the program reads weights: call bindWeights first", {
        program: this.name,
      });
    return st;
  }

  #checkState(state: StateSet | undefined): DeviceStateSet<B> | null {
    const states = this.#exec.states;
    return checkStateFor(this.schema, state, this.name, (s): s is DeviceStateSet<B> => states.has(s as never));
  }

  /** Runs one step and waits for it (so slots may be rewritten right after). */
  run(state?: StateSet): void {
    const st = this.#check(state);
    this.#device.submit(this.#stepFor(st).recording);
    this.#device.sync();
    this.#exec.noteDispatches(this.dispatchesPerStep());
    this.#last = st;
  }

  readOutput(name: string, into?: OutputData): OutputData {
    const { spec, buf, regions } = this.#output(name);
    const view =
      regions.length === 1
        ? this.#view(this.#outputViews, name, buf, regions[0]!.srcOffset, spec.dtype, spec.size)
        : undefined;
    if (view !== undefined) {
      this.#device.sync();
      return loadHost(spec.dtype, view, into);
    }
    const [offset, bytes] = outputSpan(regions, buf);
    return gatherOutput(spec, regions, this.#device.download(buf, offset, bytes), into);
  }

  /** {@link DeviceProgram.readOutput} on a device that reads back asynchronously ({@link Device.downloadAsync}). */
  async readOutputAsync(name: string, into?: OutputData): Promise<OutputData> {
    if (this.#device.downloadAsync === undefined) return this.readOutput(name, into);
    const { spec, buf, regions } = this.#output(name);
    const [offset, bytes] = outputSpan(regions, buf);
    return gatherOutput(spec, regions, await this.#device.downloadAsync(buf, offset, bytes), into);
  }

  /** The output's spec, the buffer it lives in after the last step, and its regions there. */
  #output(name: string): { spec: OutputSpec; buf: B; regions: readonly ByteRegion[] } {
    this.#alive();
    const spec = this.schema.outputs.get(name);
    const o = this.lowered.outputs.find((x) => x.name === name);
    if (spec === undefined || o === undefined)
      throw new ExecutorError(
        "unknown-output",
        `no output "${name}" (outputs: ${[...this.schema.outputs.keys()].join(", ")})`,
        { program: this.name, key: name },
      );
    return { spec, buf: this.#buffer(o.buffer, this.#last), regions: o.regions };
  }

  /** The host view of `n` elements at `offset` of `buffer` under `name` (remade when the buffer changes); none without `Device.hostView`. */
  #view(
    views: Map<string, { readonly buffer: B; readonly view: HostBuffer }>,
    name: string,
    buffer: B,
    offset: number,
    dtype: ScalarDType,
    n: number,
  ): HostBuffer | undefined {
    if (this.#device.hostView === undefined) return undefined;
    const have = views.get(name);
    if (have !== undefined && have.buffer === buffer) return have.view;
    const view = this.#device.hostView(buffer, offset, dtype, n);
    views.set(name, { buffer, view });
    return view;
  }

  capture(state?: StateSet): boolean {
    const st = this.#check(state);
    if (!this.caps.capture) return false;
    this.#prepare();
    if (this.#captured !== null) this.#release(this.#captured.rec);
    this.#captured = { state: st, rec: this.#record(st, true) };
    return true;
  }

  replay(): void {
    this.#alive();
    const c = this.#captured;
    if (c === null) throw new ExecutorError("not-captured", "replay before capture", { program: this.name });
    if (c.rec.epoch !== this.#epoch()) this.capture(c.state ?? undefined);
    this.#device.submit(this.#captured!.rec.recording);
    this.#device.sync();
    this.#exec.noteDispatches(this.dispatchesPerStep());
    this.#last = c.state;
  }

  private get caps() {
    return this.#exec.caps;
  }

  /** @internal Forgets recordings that reference a disposed StateSet. */
  dropState(state: StateSet): void {
    const r = this.#steps.get(state);
    if (r !== undefined) this.#release(r);
    this.#steps.delete(state);
    if (this.#captured?.state === state) {
      this.#release(this.#captured.rec);
      this.#captured = null;
    }
  }

  /** Bytes of slots and program-owned buffers. */
  ioBytes(): number {
    if (this.#disposed) return 0;
    let n = 0;
    for (const [id, b] of this.#owned) if (!this.#sliced.has(id)) n += b.bytes;
    for (const b of [...this.#snapshots, ...this.#arenas]) n += b.bytes;
    return n;
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#device.sync();
    this.#disposed = true;
    for (const r of this.#steps.values()) this.#release(r);
    if (this.#captured !== null) this.#release(this.#captured.rec);
    this.#steps.clear();
    for (const [id, b] of this.#owned) if (!this.#sliced.has(id)) this.#device.free(b);
    for (const b of [...this.#snapshots, ...this.#arenas]) this.#device.free(b);
    this.#exec.forget(this);
  }

  #alive(): void {
    this.#exec.alive();
    if (this.#disposed) throw new ExecutorError("disposed", "program used after dispose", { program: this.name });
  }
}

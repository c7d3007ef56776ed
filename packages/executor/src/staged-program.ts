// The staged program of the generic executor: a LoweredProgram on one Device, with its own slots, transients,
// prepared values and scratch; a step is recorded once per StateSet (and once more for replay) and resubmitted.

import type { ScalarDType } from "@poot/graph-ir";
import type { OutputData, StagedProgram, StateSet } from "./contract.js";
import type { Device, DeviceBuffer, DeviceOp } from "./device.js";
import { ExecutorError } from "./errors.js";
import { checkStateFor, loadHost, storeHost, type HostBuffer } from "./host-state.js";
import type { ByteRegion, LoweredBuffer, LoweredProgram } from "./lowering/types.js";
import { checkSlotsWritten, slotSpecFor, type OutputSpec, type ProgramSchema } from "./schema.js";
import { gatherOutput, outputSpan } from "./regions.js";
import { allocateOwned, phaseOps, type OwnedBuffers } from "./staged-buffers.js";
import { DeviceStateSet } from "./staged-state.js";
import type { DeviceExecutor } from "./staged.js";
import { storageOf } from "./storage.js";
import { timed } from "./timing.js";

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
  /** Program-owned buffers by id, the arenas their slices lie in, and which are slices ({@link OwnedBuffers}). */
  readonly #owned: Map<number, B>;
  readonly #arenas: B[];
  readonly #sliced: Set<number>;
  /** Host views of slots and outputs, with `Device.hostView` (made once, so steps allocate nothing). */
  readonly #slotViews = new Map<string, { readonly buffer: B; readonly view: HostBuffer }>();
  readonly #outputViews = new Map<string, { readonly buffer: B; readonly view: HostBuffer }>();
  #perStep = -1;
  readonly #snapshots: B[] = [];
  readonly #slots: Map<string, B>;
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
    const own = allocateOwned(this.#device, lowered, this.name);
    this.#owned = own.owned;
    this.#arenas = own.arenas;
    this.#sliced = own.sliced;
    this.#slots = own.slots;
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
    return phaseOps(this.#device, this.lowered, this.#kernels, phase, {
      name: this.name,
      kind: this.caps.kind,
      slots: this.#slots.values(),
      snapshots: this.#snapshots,
      buffer: (id) => this.#buffer(id, state),
    });
  }

  /** Runs the bind-phase launches once per weight binding (their results live in program-owned buffers). */
  #prepare(): void {
    if (this.#prepared === this.#exec.epoch) return;
    const { ops, launches } = this.#ops("bind", null);
    if (launches.length > 0) {
      timed("bind launches", () => {
        const r = this.#device.record(ops, { name: `${this.name} bind`, replay: false });
        this.#device.submit(r);
        this.#device.sync();
        this.#device.release(r);
      });
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
    const spec = slotSpecFor(this.schema, key, data, this.name);
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
    checkSlotsWritten(this.schema, this.#written, this.name);
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

// The one staged program: any LoweredProgram on any Device. Weights are uploaded lazily, once per executor, and
// shared by every program; a program owns its slots, transients, prepared values and scratch; a step is recorded
// once per StateSet (and once more for replay) and resubmitted. Every backend's executor is this over its Device.

import { dtypeName } from "@poot/graph-ir";
import type { DeviceBytes, Executor, StageInput, StageOptions, WeightSource } from "./contract.js";
import type { Device, DeviceBuffer } from "./device.js";
import { ExecutorError } from "./errors.js";
import type { LoweredBuffer, LoweredProgram } from "./lowering/types.js";
import { readWeight, type ProgramSchema } from "./schema.js";
import { DeviceProgram } from "./staged-program.js";
import { DeviceStateSet } from "./staged-state.js";
import { storageOf } from "./storage.js";
import { timed } from "./timing.js";

export { DeviceProgram, type KernelTiming } from "./staged-program.js";

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
    const mapped = file !== undefined ? timed("weights map", () => this.device.mapWeight!(b.bytes, file)) : null;
    if (mapped !== null) return this.#bound(b, mapped);
    const w = this.device.allocate(b.bytes, "weight", `weight ${b.key}`);
    // Host-visible memory is read into in place when the source can (one file read, no host copy).
    const into = this.#source?.into,
      view = into !== undefined ? this.device.hostView?.(w, 0, "u8", b.bytes) : undefined;
    if (view === undefined || !timed("weights read", () => into!(b.key!, type, view as Uint8Array))) {
      const data = timed("weights read", () => readWeight(this.#source, b.key!, type, program));
      timed("weights upload", () => this.device.upload(w, storageOf(b.dtype, data.length, data)));
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
    const lowered = timed("lower", () => this.lower(input, name));
    const s = lowered.schema;
    for (const x of [...s.slots.values(), ...s.states.values(), ...s.outputs.values()]) {
      if (!this.caps.dtypes.includes(x.dtype))
        throw new ExecutorError(
          "unsupported-dtype",
          `dtype ${dtypeName(x.dtype)} is not held by the ${this.caps.kind} executor`,
          { program: name, key: "key" in x ? x.key : x.name },
        );
    }
    const p = timed("device code load", () => this.createProgram(lowered));
    if (this.device.loaded !== undefined) timed("device code save", () => this.device.loaded!());
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

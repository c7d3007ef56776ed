// What the two reference executors share: weights read from the bound source on first use and kept, programs
// with host slot and output buffers, host StateSets, and the contract's checks (unwritten slots, foreign or
// mismatched StateSets, unknown keys, use after dispose). Each executor adds how a step runs.
import {
  ExecutorError,
  HostStateSet,
  allocHostBuffer,
  checkSlotsWritten,
  checkStateFor,
  elementBytes,
  loadHost,
  readWeight,
  slotSpecFor,
  storeHost,
  type DeviceBytes,
  type Executor,
  type ExecutorCaps,
  type HostBuffer,
  type OutputData,
  type ProgramSchema,
  type StageInput,
  type StageOptions,
  type StagedProgram,
  type StateSet,
  type WeightSource,
} from "@poot/executor";
import { numel, storageBytes, type HostData, type ValueType } from "@poot/graph-ir";

/** A host executor: the bound weights, its live programs and StateSets. */
export abstract class HostExecutor implements Executor {
  abstract readonly caps: ExecutorCaps;
  private source: WeightSource | null = null;
  /** Weights read so far, with their storage bytes. */
  private readonly weights = new Map<string, { readonly data: HostData; readonly bytes: number }>();
  private weightBytes = 0;
  /** @internal Live programs, for deviceBytes and dispose. */
  readonly programs = new Set<HostProgram>();
  /** @internal StateSets made by this executor's programs. */
  readonly stateSets = new Set<HostStateSet>();
  private disposed = false;

  abstract stage(input: StageInput, options?: StageOptions): StagedProgram;

  bindWeights(source: WeightSource): void {
    this.alive();
    this.source = source;
    this.weights.clear();
    this.weightBytes = 0;
    this.weightsChanged();
  }

  /**
   * Frees the stored data of these weights (keys not held are ignored); a later step reads them from the source
   * again. Derived data goes too (`weightsChanged`). Returns the bytes freed.
   */
  releaseWeights(keys: Iterable<string>): number {
    this.alive();
    let bytes = 0;
    for (const key of keys) {
      const w = this.weights.get(key);
      if (w === undefined) continue;
      this.weights.delete(key);
      bytes += w.bytes;
    }
    this.weightBytes -= bytes;
    if (bytes > 0) this.weightsChanged();
    return bytes;
  }

  /** Called after the weights are bound anew, released or dropped: derived data goes with them. */
  protected weightsChanged(): void {}

  /** Bytes held besides the weights as read (derived weight data). */
  protected derivedBytes(): number {
    return 0;
  }

  /** Whether a weight source is bound. */
  protected get bound(): boolean {
    return this.source !== null;
  }

  /** @internal The stored data of one Const, read from the source the first time it is needed. */
  weight(key: string, type: ValueType, program: string): HostData {
    const have = this.weights.get(key);
    if (have !== undefined) return have.data;
    const data = readWeight(this.source, key, type, program);
    const bytes = storageBytes(type.dtype, numel(type.shape));
    this.weights.set(key, { data, bytes });
    this.weightBytes += bytes;
    return data;
  }

  deviceBytes(): DeviceBytes {
    let state = 0,
      io = 0;
    for (const s of this.stateSets) state += s.bytes;
    for (const p of this.programs) io += p.ioBytes();
    const weights = this.weightBytes + this.derivedBytes();
    return { weights, state, io, total: weights + state + io };
  }

  dispose(): void {
    for (const p of [...this.programs]) p.dispose();
    for (const s of [...this.stateSets]) s.dispose();
    this.stateSets.clear();
    this.weights.clear();
    this.weightBytes = 0;
    this.source = null;
    this.weightsChanged();
    this.disposed = true;
  }

  /** @internal Throws once the executor is disposed. */
  alive(): void {
    if (this.disposed) throw new ExecutorError("disposed", "executor used after dispose");
  }
}

/** A program staged on a host executor: slot buffers, the last step's outputs, and `step` per run. */
export abstract class HostProgram<S extends HostStateSet = HostStateSet> implements StagedProgram {
  /** Slot buffers by key, as last written. */
  protected readonly slots = new Map<string, HostBuffer>();
  /** Output buffers by name, as the last step left them. */
  protected readonly outputs = new Map<string, HostBuffer>();
  private readonly written = new Set<string>();
  private disposed = false;

  constructor(
    protected readonly exec: HostExecutor,
    readonly schema: ProgramSchema,
    readonly name: string,
  ) {
    for (const s of schema.slots.values()) this.slots.set(s.key, allocHostBuffer(s.dtype, s.size));
    for (const o of schema.outputs.values()) this.outputs.set(o.name, allocHostBuffer(o.dtype, o.size));
  }

  /** Runs one step: the slots are written and `state` (null without State) is this executor's and fits. */
  protected abstract step(state: S | null): void;

  /** A new StateSet of this program's layout, told when it is freed. */
  protected abstract newState(onDispose: (s: HostStateSet) => void): S;

  abstract capture(state?: StateSet): boolean;
  abstract replay(): void;

  /** Bytes of the slot and output buffers (0 once disposed). */
  ioBytes(): number {
    if (this.disposed) return 0;
    let n = 0;
    for (const s of this.schema.slots.values()) n += s.size * elementBytes(s.dtype);
    for (const o of this.schema.outputs.values()) n += o.size * elementBytes(o.dtype);
    return n;
  }

  createState(): StateSet {
    this.alive();
    const s = this.newState((gone) => this.exec.stateSets.delete(gone));
    this.exec.stateSets.add(s);
    return s;
  }

  writeSlot(key: string, data: ArrayLike<number>): void {
    this.alive();
    const spec = slotSpecFor(this.schema, key, data, this.name);
    storeHost(spec.dtype, this.slots.get(key)!, data);
    this.written.add(key);
  }

  run(state?: StateSet): void {
    this.alive();
    checkSlotsWritten(this.schema, this.written, this.name);
    this.step(this.checkState(state));
  }

  /** `state` checked against this program: made by this executor, with the program's layout; null without State. */
  protected checkState(state: StateSet | undefined): S | null {
    const sets = this.exec.stateSets;
    return checkStateFor(this.schema, state, this.name, (s): s is S => sets.has(s as never));
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

  dispose(): void {
    this.disposed = true;
    this.exec.programs.delete(this);
  }

  /** Throws once the program or its executor is disposed. */
  protected alive(): void {
    this.exec.alive();
    if (this.disposed) throw new ExecutorError("disposed", "program used after dispose", { program: this.name });
  }
}

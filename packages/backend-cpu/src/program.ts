// A graph staged on the CPU backend: compiled by graph-plan, every plan's kernel lowered to Wasm and loaded on every
// thread once; a step is one region of the pool replaying a schedule built once per StateSet (or one region per phase).

import {
  ExecutorError,
  checkSlotData,
  elementBytes,
  loadHost,
  storeHost,
  type HostBuffer,
  type OutputData,
  type ProgramSchema,
  type StagedProgram,
  type StateSet,
} from "@poot/executor";
import {
  isPacked,
  numel,
  storageBytes,
  type Graph,
  type HostData,
  type ScalarDType,
  type Value,
  type ValueId,
} from "@poot/graph-ir";
import type { Program } from "@poot/graph-plan";
import { invariant } from "./errors.js";
import type { CpuKernel } from "./kernels.js";
import type { CpuMemory } from "./memory.js";
import type { RegionDebug, ThreadPool } from "./pool.js";
import { gatherCopies, writeSchedule, type Phase, type Schedule, type ThreadAreas } from "./schedule.js";
import { CpuStateSet, hostView } from "./state.js";
import { ROW } from "./thread/core.js";

/** How a program's steps run. */
export interface RunMode extends RegionDebug {
  /** One region per step (the default) or one region per phase (the host joins the threads for every dispatch). */
  readonly fused: boolean;
  /** Planted fault for tests: every step allocates a typed array (the allocation counters must see it). */
  readonly plantAllocation?: boolean;
  /** Chunks each thread may claim per phase, about (a phase of fewer workgroups has one each). */
  readonly claimsPerThread?: number;
}

/** What a program needs from its executor. */
export interface ProgramHost {
  readonly mem: CpuMemory;
  readonly pool: ThreadPool;
  readonly mode: RunMode;
  /** Byte address of a weight (copied from the bound source on first use). */
  weight(key: string, value: Value, program: string): number;
  /** Bumped by every bindWeights: schedules bound to older weights are rebuilt. */
  readonly weightsEpoch: number;
  createState(schema: ProgramSchema, program: string): CpuStateSet;
  ownsState(s: StateSet): boolean;
  alive(): void;
  /** Counts a step (its schedule's kernel dispatches, `native` of them native GEMVs; the profile labels its rows). */
  ran(schedule: Schedule, native: number): void;
}

interface Bound {
  readonly schedule: Schedule;
  readonly epoch: number;
}

/** A graph staged on the CPU backend (`@poot/executor`'s StagedProgram). */
export class CpuProgram implements StagedProgram {
  readonly #host: ProgramHost;
  readonly #kernels: readonly CpuKernel[];
  readonly #areas: ThreadAreas;
  readonly #slots = new Map<string, { at: number; view: HostBuffer }>();
  readonly #written = new Set<string>();
  readonly #owned = new Map<ValueId, number>();
  readonly #arena: number;
  /** Accumulators a native GEMV leaves for its epilogue phase (shared by the plans: phases run in order). */
  readonly #scratch: number;
  readonly #steps = new Map<StateSet | null, Bound>();
  readonly #outputs = new Map<string, { rootAt: number; view: HostBuffer; gather: Phase[] | null }>();
  readonly #nativePerStep: number;
  #prepared = -1;
  #last: CpuStateSet | null = null;
  #captured: CpuStateSet | null | undefined = undefined;
  #disposed = false;

  /** Built by {@link CpuExecutor.stage}. @internal */
  constructor(
    host: ProgramHost,
    readonly name: string,
    readonly schema: ProgramSchema,
    /** The compiled program. */ readonly program: Program,
    kernels: CpuKernel[],
    areas: ThreadAreas,
  ) {
    this.#host = host;
    this.#kernels = kernels;
    this.#areas = areas;
    const mem = host.mem;
    for (const s of schema.slots.values()) {
      const at = mem.alloc(s.size * elementBytes(s.dtype));
      this.#slots.set(s.key, { at, view: hostView(mem, s.dtype, at, s.size) });
    }
    const bp = program.buffers();
    this.#arena = mem.alloc(Math.max(64, bp.arenaBytes));
    for (const t of bp.transients) this.#owned.set(t.value, this.#arena + t.offset);
    this.#nativePerStep = kernels.filter((k) => k.plan.phase === "step" && k.native !== undefined).length;
    const scratch = kernels.reduce((m, k) => Math.max(m, k.scratchBytes), 0);
    this.#scratch = scratch > 0 ? mem.alloc(scratch) : 0;
  }

  #root(id: ValueId): ValueId {
    return this.program.buffers().aliases.get(id) ?? id;
  }

  /** Byte address of root value `root` for a step against `state`. */
  #addr(root: ValueId, state: CpuStateSet | null): number {
    const g = this.program.graph;
    const v = g.values[root] as Value;
    const s = v.storage;
    switch (s.kind) {
      case "const":
        return this.#host.weight(s.key, v, this.name);
      case "slot":
        return this.#slots.get(s.key)!.at;
      case "state":
        if (state === null)
          throw new ExecutorError("unknown-state", "the program has state: pass a StateSet from createState()", {
            program: this.name,
          });
        return state.address(s.key);
      case "computed":
      case "device": {
        let at = this.#owned.get(root);
        if (at === undefined) {
          const n = numel(v.shape);
          at = this.#host.mem.alloc(storageBytes(v.dtype, n));
          if (s.kind === "computed") writeHost(this.#host.mem, v, at, s.data as HostData);
          this.#owned.set(root, at);
        }
        return at;
      }
      default:
        return s satisfies never;
    }
  }

  /** The phases of the plans of one kind: snapshot copies, then the kernel, per plan. */
  #phases(kind: "step" | "bind", state: CpuStateSet | null): Phase[] {
    const out: Phase[] = [];
    for (const k of this.#kernels) {
      if (k.plan.phase !== kind || k.plan.kernel.provenance === "none") continue;
      const req = k.plan.kernel.request;
      const outRoot = this.#root(req.output.root);
      const addrs = k.buffers.map((src) => {
        if (src.kind === "scratch") return this.#scratch + src.offset;
        const root = src.kind === "output" ? outRoot : this.#root(req.inputs[src.index]!.root);
        const at = this.#addr(root, state);
        if (src.kind === "output" || root !== outRoot) return at;
        // An operand that is also the output is read from a copy taken before the kernel (no cross-workgroup races).
        const v = this.program.graph.values[root] as Value;
        const bytes = storageBytes(v.dtype, numel(v.shape));
        const snap = this.#host.mem.alloc(bytes);
        this.#owned.set(-1 - this.#owned.size, snap);
        out.push({ kind: "copy", src: at, dst: snap, bytes });
        return snap;
      });
      out.push({ kind: "kernel", kernel: k, addrs });
    }
    return out;
  }

  /** The step's schedule for `state`, built on first use (and after a new weight binding), then replayed. */
  #stepFor(state: CpuStateSet | null): Schedule {
    const host = this.#host;
    const epoch = host.weightsEpoch;
    if (this.#prepared !== epoch) {
      const bind = this.#phases("bind", null);
      if (bind.length > 0) {
        const s = writeSchedule(host.mem, bind, host.pool.threads, this.#areas, host.mode.claimsPerThread);
        host.pool.run(s.rows, s.n);
        for (const b of s.blocks) host.mem.free(b);
      }
      this.#prepared = epoch;
    }
    const have = this.#steps.get(state);
    if (have !== undefined && have.epoch === epoch) return have.schedule;
    if (have !== undefined) for (const b of have.schedule.blocks) host.mem.free(b);
    const phases = this.#phases("step", state);
    // A state_out computed outside its State buffer is copied into it after the kernels (donation).
    const g = this.program.graph;
    for (const s of g.states) {
      const from = this.#root(s.output),
        to = this.#root(s.input);
      if (from !== to) phases.push(...gatherCopies(g, s.output, from, this.#addr(from, state), this.#addr(to, state)));
    }
    const schedule = writeSchedule(host.mem, phases, host.pool.threads, this.#areas, host.mode.claimsPerThread);
    this.#steps.set(state, { schedule, epoch });
    return schedule;
  }

  #exec(s: Schedule): void {
    const pool = this.#host.pool,
      mode = this.#host.mode;
    if (mode.plantAllocation === true) {
      this.#host.mem.countArray();
      void new Float32Array(1);
    }
    this.#host.ran(s, this.#nativePerStep);
    if (mode.fused) pool.run(s.rows, s.n, mode);
    else for (let i = 0; i < s.n; i++) pool.run(s.rows + i * ROW.WORDS, 1, mode);
  }

  /** A zeroed StateSet with this program's state layout. */
  createState(): CpuStateSet {
    this.#alive();
    return this.#host.createState(this.schema, this.name);
  }

  /** Writes one slot straight into the shared memory (checked against the schema). */
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
    storeHost(spec.dtype, this.#slots.get(key)!.view, data);
    this.#written.add(key);
  }

  #check(state: StateSet | undefined): CpuStateSet | null {
    for (const key of this.schema.slots.keys()) {
      if (!this.#written.has(key))
        throw new ExecutorError("slot-unwritten", "slot was never written", { program: this.name, key });
    }
    if (this.schema.states.size === 0) return null;
    if (state === undefined)
      throw new ExecutorError(
        "unknown-state",
        `the program has ${this.schema.states.size} state(s): pass a StateSet from createState()`,
        { program: this.name },
      );
    if (!(state instanceof CpuStateSet) || !this.#host.ownsState(state))
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

  /** Runs one step: one region of the pool over the step's schedule. */
  run(state?: StateSet): void {
    this.#alive();
    const st = this.#check(state);
    this.#exec(this.#stepFor(st));
    this.#last = st;
  }

  /** Copies an output to the host (f16/bf16 widened to f32); with `into`, allocation-free. */
  readOutput(name: string, into?: OutputData): OutputData {
    this.#alive();
    const spec = this.schema.outputs.get(name);
    if (spec === undefined)
      throw new ExecutorError(
        "unknown-output",
        `no output "${name}" (outputs: ${[...this.schema.outputs.keys()].join(", ")})`,
        { program: this.name, key: name },
      );
    let o = this.#outputs.get(name);
    const g = this.program.graph;
    const value = g.outputs.find((x) => x.name === name)!.value;
    const root = this.#root(value);
    const rootAt = this.#addr(root, this.#last);
    if (o === undefined || o.rootAt !== rootAt) {
      const mem = this.#host.mem;
      const runs = gatherCopies(g, value, root, rootAt, 0);
      if (runs.length === 1 && runs[0]!.kind === "copy")
        o = { rootAt, view: hostView(mem, spec.dtype, runs[0]!.src, spec.size), gather: null };
      else {
        // A strided view of its root (a transpose, a broadcast): gathered into a dense block on every read.
        const dst = mem.alloc(spec.size * elementBytes(spec.dtype));
        o = {
          rootAt,
          view: hostView(mem, spec.dtype, dst, spec.size),
          gather: gatherCopies(g, value, root, rootAt, dst),
        };
      }
      this.#outputs.set(name, o);
    }
    if (o.gather !== null)
      for (const c of o.gather) if (c.kind === "copy") this.#host.mem.u8.copyWithin(c.dst, c.src, c.src + c.bytes);
    return loadHost(spec.dtype, o.view, into);
  }

  /** Builds the step's schedule for `state`; {@link replay} runs it with the slots' values at replay time. */
  capture(state?: StateSet): boolean {
    this.#alive();
    const st = this.#check(state);
    this.#stepFor(st);
    this.#captured = st;
    return true;
  }

  /** Replays the captured step (its schedule is rebuilt only after a new bindWeights). */
  replay(): void {
    this.#alive();
    const st = this.#captured;
    if (st === undefined) throw new ExecutorError("not-captured", "replay before capture", { program: this.name });
    this.#exec(this.#stepFor(st));
    this.#last = st;
  }

  /** Kernel dispatches per step. */
  dispatchesPerStep(): number {
    return this.#kernels.filter((k) => k.plan.phase === "step").length;
  }

  /** Of those, the native GEMVs (decision 0952); the rest run Wasm kernels. */
  nativeDispatchesPerStep(): number {
    return this.#nativePerStep;
  }

  /** Bytes of slots, the transient arena and program-owned buffers (snapshots, computed tables, prepared values). */
  ioBytes(): number {
    if (this.#disposed) return 0;
    const arena = this.program.buffers().arenaBytes;
    let n = arena;
    for (const s of this.schema.slots.values()) n += s.size * elementBytes(s.dtype);
    for (const at of this.#owned.values())
      if (at < this.#arena || at >= this.#arena + arena) n += this.#host.mem.blockBytes(at);
    return n;
  }

  /** Frees the slots and transients (kernels stay loaded on the threads; schedule rows are not reused, see 0950). */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    const mem = this.#host.mem;
    for (const s of this.#slots.values()) mem.free(s.at);
    mem.free(this.#arena);
    if (this.#scratch !== 0) mem.free(this.#scratch);
    for (const b of this.#steps.values()) for (const x of b.schedule.blocks) mem.free(x);
    for (const at of this.#owned.values())
      if (at < this.#arena || at >= this.#arena + this.program.buffers().arenaBytes) mem.free(at);
    for (const o of this.#outputs.values()) if (o.gather !== null) mem.free((o.gather[0] as { dst: number }).dst);
  }

  #alive(): void {
    this.#host.alive();
    if (this.#disposed) throw new ExecutorError("disposed", "program used after dispose", { program: this.name });
  }
}

/** Writes host data of value `v` (f32 numbers, 16-bit bits or numbers, integers, packed bytes) at `at`. */
export function writeHost(mem: CpuMemory, v: Value, at: number, data: HostData): void {
  const n = numel(v.shape);
  if (isPacked(v.dtype)) {
    invariant(data instanceof Uint8Array, "packed data comes as bytes");
    mem.u8.set(data, at);
    return;
  }
  const d = v.dtype as ScalarDType;
  const view = hostView(mem, d, at, n);
  if ((d === "bf16" || d === "f16") && data instanceof Uint16Array) view.set(data);
  else storeHost(d, view, data);
}

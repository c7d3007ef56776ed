// StateSets of the CPU backend: each state is a block of the shared memory (kernels read and write it in place),
// read and written through host views, lanes copied inside the memory (a lane is a contiguous run of each state).

import {
  ExecutorError,
  elementBytes,
  laneCount,
  loadHost,
  sameLaneLayout,
  storeHost,
  type HostBuffer,
  type OutputData,
  type ProgramSchema,
  type StateSet,
  type StateSpec,
} from "@poot/executor";
import type { ScalarDType } from "@poot/graph-ir";
import type { CpuMemory } from "./memory.js";

/** A typed view (the storage array of `dtype`: f16/bf16 as bits) of `n` elements at byte address `at` (counted). */
export function hostView(mem: CpuMemory, dtype: ScalarDType, at: number, n: number): HostBuffer {
  switch (dtype) {
    case "f32":
      return mem.view(Float32Array, at, n);
    case "f16":
    case "bf16":
      return mem.view(Uint16Array, at, n);
    case "i32":
      return mem.view(Int32Array, at, n);
    case "u32":
      return mem.view(Uint32Array, at, n);
    case "u8":
    case "bool":
      return mem.view(Uint8Array, at, n);
    default:
      return dtype satisfies never;
  }
}

/** A StateSet in the shared memory. */
export class CpuStateSet implements StateSet {
  readonly lanes: number;
  readonly #mem: CpuMemory;
  readonly #blocks = new Map<string, { at: number; view: HostBuffer; spec: StateSpec }>();
  readonly #onDispose: (s: CpuStateSet) => void;
  #disposed = false;

  /** Built by {@link CpuProgram.createState}. @internal */
  constructor(
    mem: CpuMemory,
    readonly schema: ProgramSchema,
    private readonly program: string,
    onDispose: (s: CpuStateSet) => void,
  ) {
    this.#mem = mem;
    this.lanes = laneCount(schema);
    this.#onDispose = onDispose;
    for (const s of schema.states.values()) {
      const at = mem.alloc(s.size * elementBytes(s.dtype));
      this.#blocks.set(s.key, { at, view: hostView(mem, s.dtype, at, s.size), spec: s });
    }
  }

  /** Bytes held. */
  get bytes(): number {
    if (this.#disposed) return 0;
    let n = 0;
    for (const s of this.schema.states.values()) n += s.size * elementBytes(s.dtype);
    return n;
  }

  #block(key: string): { at: number; view: HostBuffer; spec: StateSpec } {
    this.#alive();
    const b = this.#blocks.get(key);
    if (b === undefined)
      throw new ExecutorError(
        "unknown-state",
        `no state "${key}" (states: ${[...this.#blocks.keys()].join(", ") || "none"})`,
        { program: this.program, key },
      );
    return b;
  }

  /** Byte address of state `key` in the shared memory. */
  address(key: string): number {
    return this.#block(key).at;
  }

  /** Copies one state to the host (f16/bf16 widened to f32). */
  read(key: string): OutputData {
    const b = this.#block(key);
    return loadHost(b.spec.dtype, b.view);
  }

  /** Overwrites one state from the host. */
  write(key: string, data: ArrayLike<number>): void {
    const b = this.#block(key);
    if (data.length !== b.spec.size)
      throw new ExecutorError("state-mismatch", `state takes ${b.spec.size} elements, got ${data.length}`, {
        program: this.program,
        key,
        expected: b.spec.size,
        actual: data.length,
      });
    if ((b.spec.dtype === "bf16" || b.spec.dtype === "f16") && data instanceof Uint16Array) b.view.set(data);
    else storeHost(b.spec.dtype, b.view, data);
  }

  /** Copies `count` lanes of every state from `from` (lane `fromLane`...) into this set at `toLane`... */
  copyLanes(from: StateSet, fromLane: number, toLane: number, count = 1): void {
    this.#alive();
    if (!(from instanceof CpuStateSet) || !sameLaneLayout(this.schema, from.schema)) {
      throw new ExecutorError(
        "unknown-state",
        "the two StateSets have different per-lane layouts (or another executor)",
        { program: this.program },
      );
    }
    const bad = (lane: number, lanes: number): boolean => !Number.isInteger(lane) || lane < 0 || lane + count > lanes;
    if (!Number.isInteger(count) || count < 1 || bad(fromLane, from.lanes) || bad(toLane, this.lanes)) {
      throw new ExecutorError(
        "state-mismatch",
        `cannot copy ${count} lane(s) ${fromLane} -> ${toLane} between sets of ${from.lanes} and ${this.lanes} lanes`,
        { program: this.program, expected: this.lanes, actual: `${fromLane}->${toLane}x${count}` },
      );
    }
    for (const s of this.schema.states.values()) {
      const per = (s.size / this.lanes) * elementBytes(s.dtype);
      const src = from.address(s.key) + fromLane * per;
      this.#mem.u8.copyWithin(this.address(s.key) + toLane * per, src, src + count * per);
    }
  }

  /** Zeroes every state. */
  zero(): void {
    this.#alive();
    for (const b of this.#blocks.values()) b.view.fill(0);
  }

  /** Frees the blocks. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const b of this.#blocks.values()) this.#mem.free(b.at);
    this.#onDispose(this);
  }

  #alive(): void {
    if (this.#disposed) throw new ExecutorError("disposed", "StateSet used after dispose", { program: this.program });
  }
}

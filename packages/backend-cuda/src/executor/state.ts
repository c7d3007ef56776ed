// Device-side StateSets of the CUDA executor: one pool buffer per state key (zeroed at creation), read and
// written with synchronous copies, lanes copied on the device (a lane is a contiguous run of each buffer).

import { ExecutorError, outputOf, storageOf, elementBytes, laneCount, sameLaneLayout, type OutputData, type ProgramSchema, type StateSet, type StateSpec } from "@poot/executor";
import type { CudaContext } from "../context.js";
import type { DeviceBuffer } from "../memory.js";

/** A StateSet in device memory. */
export class CudaStateSet implements StateSet {
  /** The layout. */
  readonly schema: ProgramSchema;
  /** Lanes (the leading dimension shared by every state). */
  readonly lanes: number;
  readonly #buffers = new Map<string, DeviceBuffer>();
  readonly #ctx: CudaContext;
  readonly #program: string;
  readonly #onDispose: (s: CudaStateSet) => void;
  #disposed = false;

  constructor(ctx: CudaContext, schema: ProgramSchema, program: string, onDispose: (s: CudaStateSet) => void) {
    this.#ctx = ctx;
    this.schema = schema;
    this.#program = program;
    this.lanes = laneCount(schema);
    this.#onDispose = onDispose;
    for (const s of schema.states.values()) {
      const b = ctx.allocate(s.size * elementBytes(s.dtype));
      b.fill(0, ctx.stream);
      this.#buffers.set(s.key, b);
    }
    ctx.synchronize();
  }

  /** Bytes held. */
  get bytes(): number {
    if (this.#disposed) return 0;
    let n = 0;
    for (const s of this.schema.states.values()) n += s.size * elementBytes(s.dtype);
    return n;
  }

  /** The device buffer of `key` (checked). */
  buffer(key: string): DeviceBuffer {
    this.#alive();
    const b = this.#buffers.get(key);
    if (b === undefined) throw new ExecutorError("unknown-state", `no state "${key}" (states: ${[...this.#buffers.keys()].join(", ") || "none"})`, { program: this.#program, key });
    return b;
  }

  #spec(key: string): StateSpec {
    this.buffer(key);
    return this.schema.states.get(key)!;
  }

  /** Copies one state to the host (f16/bf16 widened to f32), after the work queued so far. */
  read(key: string): OutputData {
    const s = this.#spec(key);
    this.#ctx.synchronize();
    const bytes = this.buffer(key).download(new Uint8Array(s.size * elementBytes(s.dtype)));
    return outputOf(s.dtype, bytes, s.size);
  }

  /** Overwrites one state from the host. */
  write(key: string, data: ArrayLike<number>): void {
    const s = this.#spec(key);
    if (data.length !== s.size) throw new ExecutorError("state-mismatch", `state takes ${s.size} elements, got ${data.length}`, { program: this.#program, key, expected: s.size, actual: data.length });
    this.#ctx.synchronize();
    this.buffer(key).upload(storageOf(s.dtype, s.size, data));
  }

  /** Copies `count` lanes of every state from `from` (lane `fromLane`...) into this set at `toLane`... */
  copyLanes(from: StateSet, fromLane: number, toLane: number, count = 1): void {
    this.#alive();
    if (!(from instanceof CudaStateSet) || !sameLaneLayout(this.schema, from.schema)) {
      throw new ExecutorError("unknown-state", "the two StateSets have different per-lane layouts (or another executor)", { program: this.#program });
    }
    const bad = (lane: number, lanes: number): boolean => !Number.isInteger(lane) || lane < 0 || lane + count > lanes;
    if (!Number.isInteger(count) || count < 1 || bad(fromLane, from.lanes) || bad(toLane, this.lanes)) {
      throw new ExecutorError("state-mismatch", `cannot copy ${count} lane(s) ${fromLane} -> ${toLane} between sets of ${from.lanes} and ${this.lanes} lanes`, { program: this.#program, expected: this.lanes, actual: `${fromLane}->${toLane}x${count}` });
    }
    for (const s of this.schema.states.values()) {
      const per = (s.size / this.lanes) * elementBytes(s.dtype);
      this.buffer(s.key).copyRange(from.buffer(s.key), fromLane * per, toLane * per, count * per, this.#ctx.stream);
    }
    this.#ctx.synchronize();
  }

  /** Zeroes every state. */
  zero(): void {
    this.#alive();
    for (const b of this.#buffers.values()) b.fill(0, this.#ctx.stream);
    this.#ctx.synchronize();
  }

  /** Frees the buffers. */
  dispose(): void {
    if (this.#disposed) return;
    this.#ctx.synchronize();
    this.#disposed = true;
    for (const b of this.#buffers.values()) b.dispose();
    this.#onDispose(this);
  }

  #alive(): void {
    if (this.#disposed) throw new ExecutorError("disposed", "StateSet used after dispose", { program: this.#program });
  }
}

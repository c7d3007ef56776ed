// Device-side StateSets of the WebGPU executor: one storage buffer per state key, read and written through
// the queue, lanes copied on the device (a lane is a contiguous run of every state's buffer).

import {
  ExecutorError,
  outputOf,
  storageOf,
  elementBytes,
  laneCount,
  sameLaneLayout,
  type OutputData,
  type ProgramSchema,
  type StateSpec,
} from "@poot/executor";
import type { WgpuBuffer } from "../buffers.js";
import type { WgpuContext } from "../context.js";

/** The async twin of `@poot/executor`'s `StateSet`, holding device buffers. */
export class WgpuStateSet {
  /** The layout. */
  readonly schema: ProgramSchema;
  /** Lanes (the leading dimension shared by every state). */
  readonly lanes: number;
  /** Buffers by state key. */
  readonly buffers: ReadonlyMap<string, WgpuBuffer>;
  readonly #ctx: WgpuContext;
  readonly #program: string;
  readonly #onDispose: (s: WgpuStateSet) => void;
  #disposed = false;

  private constructor(
    ctx: WgpuContext,
    schema: ProgramSchema,
    program: string,
    buffers: Map<string, WgpuBuffer>,
    onDispose: (s: WgpuStateSet) => void,
  ) {
    this.#ctx = ctx;
    this.schema = schema;
    this.#program = program;
    this.lanes = laneCount(schema);
    this.buffers = buffers;
    this.#onDispose = onDispose;
  }

  /** Makes a zeroed set for `schema` (WebGPU buffers start zeroed). */
  static async create(
    ctx: WgpuContext,
    schema: ProgramSchema,
    program: string,
    onDispose: (s: WgpuStateSet) => void,
  ): Promise<WgpuStateSet> {
    const buffers = new Map<string, WgpuBuffer>();
    for (const s of schema.states.values())
      buffers.set(
        s.key,
        await ctx.buffers.create("state", s.size * elementBytes(s.dtype), `${program} state ${s.key}`),
      );
    return new WgpuStateSet(ctx, schema, program, buffers, onDispose);
  }

  /** Bytes held. */
  get bytes(): number {
    if (this.#disposed) return 0;
    let n = 0;
    for (const s of this.schema.states.values()) n += s.size * elementBytes(s.dtype);
    return n;
  }

  /** The buffer of `key` (checked). */
  buffer(key: string): WgpuBuffer {
    this.#alive();
    const b = this.buffers.get(key);
    if (b === undefined)
      throw new ExecutorError(
        "unknown-state",
        `no state "${key}" (states: ${[...this.buffers.keys()].join(", ") || "none"})`,
        { program: this.#program, key },
      );
    return b;
  }

  #spec(key: string): StateSpec {
    this.buffer(key);
    return this.schema.states.get(key)!;
  }

  /** Copies one state to the host (f16/bf16 widened to f32). */
  async read(key: string): Promise<OutputData> {
    const s = this.#spec(key);
    return outputOf(s.dtype, await this.buffer(key).read(), s.size);
  }

  /** Overwrites one state from the host. */
  write(key: string, data: ArrayLike<number>): void {
    const s = this.#spec(key);
    if (data.length !== s.size)
      throw new ExecutorError("state-mismatch", `state takes ${s.size} elements, got ${data.length}`, {
        program: this.#program,
        key,
        expected: s.size,
        actual: data.length,
      });
    this.buffer(key).write(storageOf(s.dtype, s.size, data));
  }

  /** Copies `count` lanes of every state from `from` (lane `fromLane`...) into this set at `toLane`... */
  async copyLanes(from: WgpuStateSet, fromLane: number, toLane: number, count = 1): Promise<void> {
    this.#alive();
    if (!sameLaneLayout(this.schema, from.schema))
      throw new ExecutorError("unknown-state", "the two StateSets have different per-lane layouts", {
        program: this.#program,
      });
    const bad = (lane: number, lanes: number): boolean => !Number.isInteger(lane) || lane < 0 || lane + count > lanes;
    if (!Number.isInteger(count) || count < 1 || bad(fromLane, from.lanes) || bad(toLane, this.lanes)) {
      throw new ExecutorError(
        "state-mismatch",
        `cannot copy ${count} lane(s) ${fromLane} -> ${toLane} between sets of ${from.lanes} and ${this.lanes} lanes`,
        { program: this.#program, expected: this.lanes, actual: `${fromLane}->${toLane}x${count}` },
      );
    }
    const d = this.#ctx.device.device;
    const enc = d.createCommandEncoder({ label: `${this.#program} copyLanes` });
    const unaligned: StateSpec[] = [];
    for (const s of this.schema.states.values()) {
      const per = (s.size / this.lanes) * elementBytes(s.dtype);
      // WebGPU copies whole 4-byte words; a 16-bit lane of odd length goes through the host instead.
      if (per % 4 !== 0) unaligned.push(s);
      else
        enc.copyBufferToBuffer(
          from.buffer(s.key).gpu,
          fromLane * per,
          this.buffer(s.key).gpu,
          toLane * per,
          count * per,
        );
    }
    await this.#ctx.device.scoped("copyLanes", () => d.queue.submit([enc.finish()]));
    for (const s of unaligned) {
      const per = s.size / this.lanes,
        eb = elementBytes(s.dtype);
      const src = await from.buffer(s.key).read(),
        dst = await this.buffer(s.key).read();
      dst.set(src.subarray(fromLane * per * eb, (fromLane + count) * per * eb), toLane * per * eb);
      this.buffer(s.key).write(dst);
    }
  }

  /** Zeroes every state. */
  zero(): void {
    this.#alive();
    const d = this.#ctx.device.device;
    const enc = d.createCommandEncoder({ label: `${this.#program} zero` });
    for (const b of this.buffers.values()) enc.clearBuffer(b.gpu);
    d.queue.submit([enc.finish()]);
  }

  /** Frees the buffers. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const b of this.buffers.values()) b.destroy();
    this.#onDispose(this);
  }

  #alive(): void {
    if (this.#disposed) throw new ExecutorError("disposed", "StateSet used after dispose", { program: this.#program });
  }
}

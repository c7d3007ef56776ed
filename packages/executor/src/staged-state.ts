// StateSets of the generic staged program: one device buffer per state key (zeroed at creation), read and written
// through the device, lanes copied on the device (a lane is a contiguous run of every state's buffer).

import type { OutputData, StateSet } from "./contract.js";
import type { Device, DeviceBuffer } from "./device.js";
import { ExecutorError } from "./errors.js";
import { laneCount } from "./host-state.js";
import { elementBytes, sameLaneLayout, type ProgramSchema, type StateSpec } from "./schema.js";
import { outputOf, storageOf } from "./storage.js";

/** A StateSet in device memory. */
export class DeviceStateSet<B extends DeviceBuffer = DeviceBuffer> implements StateSet {
  readonly lanes: number;
  readonly #buffers = new Map<string, B>();
  readonly #device: Device<B>;
  readonly #program: string;
  readonly #onDispose: (s: DeviceStateSet<B>) => void;
  #disposed = false;

  /** @param device - where the buffers live; @param schema - the layout; @param program - for messages. */
  constructor(
    device: Device<B>,
    readonly schema: ProgramSchema,
    program: string,
    onDispose: (s: DeviceStateSet<B>) => void,
  ) {
    this.#device = device;
    this.#program = program;
    this.#onDispose = onDispose;
    this.lanes = laneCount(schema);
    for (const s of schema.states.values()) {
      const b = device.allocate(Math.max(4, s.size * elementBytes(s.dtype)), "state", `${program} state ${s.key}`);
      device.zero(b);
      this.#buffers.set(s.key, b);
    }
    device.sync();
  }

  get bytes(): number {
    if (this.#disposed) return 0;
    let n = 0;
    for (const s of this.schema.states.values()) n += s.size * elementBytes(s.dtype);
    return n;
  }

  /** The device buffer of `key` (checked). */
  buffer(key: string): B {
    this.#alive();
    const b = this.#buffers.get(key);
    if (b === undefined)
      throw new ExecutorError(
        "unknown-state",
        `no state "${key}" (states: ${[...this.#buffers.keys()].join(", ") || "none"})`,
        { program: this.#program, key },
      );
    return b;
  }

  #spec(key: string): StateSpec {
    this.buffer(key);
    return this.schema.states.get(key)!;
  }

  read(key: string): OutputData {
    const s = this.#spec(key);
    return outputOf(s.dtype, this.#device.download(this.buffer(key), 0, s.size * elementBytes(s.dtype)), s.size);
  }

  /** {@link DeviceStateSet.read} on a device that reads back asynchronously ({@link Device.downloadAsync}). */
  async readAsync(key: string): Promise<OutputData> {
    const s = this.#spec(key);
    if (this.#device.downloadAsync === undefined) return this.read(key);
    const data = await this.#device.downloadAsync(this.buffer(key), 0, s.size * elementBytes(s.dtype));
    return outputOf(s.dtype, data, s.size);
  }

  write(key: string, data: ArrayLike<number>): void {
    const s = this.#spec(key);
    if (data.length !== s.size)
      throw new ExecutorError("state-mismatch", `state takes ${s.size} elements, got ${data.length}`, {
        program: this.#program,
        key,
        expected: s.size,
        actual: data.length,
      });
    this.#device.sync();
    this.#device.upload(this.buffer(key), storageOf(s.dtype, s.size, data));
    this.#device.sync();
  }

  copyLanes(from: StateSet, fromLane: number, toLane: number, count = 1): void {
    this.#alive();
    if (!(from instanceof DeviceStateSet) || !sameLaneLayout(this.schema, from.schema)) {
      throw new ExecutorError(
        "unknown-state",
        "the two StateSets have different per-lane layouts (or another executor)",
        { program: this.#program },
      );
    }
    const bad = (lane: number, lanes: number): boolean => !Number.isInteger(lane) || lane < 0 || lane + count > lanes;
    if (!Number.isInteger(count) || count < 1 || bad(fromLane, from.lanes) || bad(toLane, this.lanes)) {
      throw new ExecutorError(
        "state-mismatch",
        `cannot copy ${count} lane(s) ${fromLane} -> ${toLane} between sets of ${from.lanes} and ${this.lanes} lanes`,
        { program: this.#program, expected: this.lanes, actual: `${fromLane}->${toLane}x${count}` },
      );
    }
    for (const s of this.schema.states.values()) {
      const per = (s.size / this.lanes) * elementBytes(s.dtype);
      this.#device.copy((from as DeviceStateSet<B>).buffer(s.key), this.buffer(s.key), [
        { srcOffset: fromLane * per, dstOffset: toLane * per, bytes: count * per },
      ]);
    }
    this.#device.sync();
  }

  zero(): void {
    this.#alive();
    for (const b of this.#buffers.values()) this.#device.zero(b);
    this.#device.sync();
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#device.sync();
    this.#disposed = true;
    for (const b of this.#buffers.values()) this.#device.free(b);
    this.#onDispose(this);
  }

  #alive(): void {
    if (this.#disposed) throw new ExecutorError("disposed", "StateSet used after dispose", { program: this.#program });
  }
}

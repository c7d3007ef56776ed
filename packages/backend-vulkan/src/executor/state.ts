// A StateSet in device-local Vulkan buffers (KV caches, recurrent state): zeroed on creation, host reads and
// writes through staging, and lane copies as device-side buffer copies.

import { numel, type ScalarDType } from "@poot/graph-ir";
import { ExecutorError, elementBytes, laneCount, sameLaneLayout, type OutputData, type ProgramSchema, type StateSet } from "@poot/executor";
import type { VulkanBuffer } from "../buffer.js";
import type { VulkanDevice } from "../device.js";
import { decodeDevice, encodeHost } from "./storage.js";

/** Device-side persistent buffers of one program layout. */
export class VulkanStateSet implements StateSet {
  /** Buffers by state key. */
  readonly buffers = new Map<string, VulkanBuffer>();
  readonly lanes: number;
  readonly bytes: number;
  private disposed = false;

  constructor(
    private readonly device: VulkanDevice,
    readonly schema: ProgramSchema,
    private readonly program: string,
    private readonly onDispose: (s: VulkanStateSet) => void,
  ) {
    this.lanes = laneCount(schema);
    let total = 0;
    for (const s of schema.states.values()) {
      const b = device.createBuffer(s.size * elementBytes(s.dtype), "device", `state ${s.key}`);
      device.zero(b);
      this.buffers.set(s.key, b);
      total += s.size * elementBytes(s.dtype);
    }
    this.bytes = total;
  }

  private spec(key: string): { dtype: ScalarDType; size: number; buffer: VulkanBuffer } {
    this.alive();
    const s = this.schema.states.get(key);
    if (s === undefined) throw new ExecutorError("unknown-state", `no state named ${key}`, { program: this.program, key });
    return { dtype: s.dtype, size: s.size, buffer: this.buffers.get(key)! };
  }

  read(key: string): OutputData {
    const s = this.spec(key);
    return decodeDevice(s.dtype, this.device.download(s.buffer, 0, s.size * elementBytes(s.dtype)), s.size);
  }

  write(key: string, data: ArrayLike<number>): void {
    const s = this.spec(key);
    if (data.length !== s.size) throw new ExecutorError("state-mismatch", `state takes ${s.size} elements, got ${data.length}`, { program: this.program, key, expected: s.size, actual: data.length });
    this.device.upload(s.buffer, encodeHost(s.dtype, s.size, data));
  }

  copyLanes(from: StateSet, fromLane: number, toLane: number, count = 1): void {
    this.alive();
    if (!sameLaneLayout(from.schema, this.schema)) throw new ExecutorError("state-mismatch", "the StateSets have different state layouts", { program: this.program });
    for (const [lane, lanes] of [[fromLane, from.lanes], [toLane, this.lanes]] as const) {
      if (!Number.isInteger(count) || count < 0 || !Number.isInteger(lane) || lane < 0 || lane + count > lanes) {
        throw new ExecutorError("state-mismatch", `lanes ${lane}..${lane + count - 1} outside 0..${lanes - 1}`, { program: this.program, expected: lanes, actual: lane + count });
      }
    }
    if (count === 0) return;
    for (const s of this.schema.states.values()) {
      const per = (numel(s.shape.slice(1)) || 1) * elementBytes(s.dtype);
      const dst = this.buffers.get(s.key)!;
      if (from instanceof VulkanStateSet) {
        const src = from.buffers.get(s.key)!;
        this.device.oneShot(`copy lanes of ${s.key}`, (cmd) => this.device.vk.fn.vkCmdCopyBuffer!(cmd, src.handle, dst.handle, 1, [{ srcOffset: fromLane * per, dstOffset: toLane * per, size: count * per }]));
      } else {
        // Another backend's StateSet: go through the host.
        const data = from.read(s.key);
        const n = per / elementBytes(s.dtype);
        this.device.upload(dst, encodeHost(s.dtype, n * count, Array.from(data.subarray(fromLane * n, (fromLane + count) * n))), toLane * per);
      }
    }
  }

  zero(): void {
    this.alive();
    for (const b of this.buffers.values()) this.device.zero(b);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (this.device.alive) for (const b of this.buffers.values()) b.dispose();
    this.onDispose(this);
  }

  private alive(): void {
    if (this.disposed) throw new ExecutorError("disposed", "the StateSet was disposed", { program: this.program });
  }
}

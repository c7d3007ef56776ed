// The eval executor's StateSet: host buffers in the state's dtype plus a float64 copy of each state as the
// last step left it, so consecutive steps skip widening State in and narrowing it out (same values).
import { HostStateSet, storeHost, type StateSet, type HostBuffer } from "@poot/executor";
import type { Tensor } from "@poot/graph-ir";

/** A HostStateSet that also keeps step outputs as evaluator tensors; the typed buffers sync on demand. */
export class EvalStateSet extends HostStateSet {
  /** Evaluator tensors by key, newer than the typed buffer when the key is in `stale`. */
  private readonly wide = new Map<string, Tensor>();
  private readonly stale = new Set<string>();

  /** The evaluator tensor a step left for `key`, if the typed buffer has not been written since. */
  tensor(key: string): Tensor | undefined {
    return this.wide.get(key);
  }

  /** Records a step's state_out for `key` (values already rounded to the state's dtype). */
  setTensor(key: string, t: Tensor): void {
    this.wide.set(key, t);
    this.stale.add(key);
  }

  override buffer(key: string): HostBuffer {
    const b = super.buffer(key);
    if (this.stale.delete(key)) storeHost(this.schema.states.get(key)!.dtype, b, this.wide.get(key)!.data);
    return b;
  }

  override get bytes(): number {
    let n = super.bytes;
    for (const t of this.wide.values()) n += t.data.byteLength;
    return n;
  }

  override write(key: string, data: ArrayLike<number>): void {
    super.write(key, data);
    this.forget(key);
  }

  override copyLanes(from: StateSet, fromLane: number, toLane: number, count = 1): void {
    super.copyLanes(from, fromLane, toLane, count);
    for (const key of this.schema.states.keys()) this.forget(key);
  }

  override zero(): void {
    this.stale.clear();
    this.wide.clear();
    super.zero();
  }

  override dispose(): void {
    this.wide.clear();
    this.stale.clear();
    super.dispose();
  }

  /** Drops the tensor of `key` after its typed buffer changed. */
  private forget(key: string): void {
    this.wide.delete(key);
    this.stale.delete(key);
  }
}

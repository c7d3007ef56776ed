// The one shared WebAssembly.Memory of a CPU executor and its allocator: weights, slots, state, transients, schedules
// and per-thread scratch all live in it. Counters record every growth and host view made, so tests can prove a step allocates nothing.

import { CpuError } from "./errors.js";

/** The subset of the WebAssembly JS API the backend uses (this project's ES lib typings do not declare it). */
export interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (
    module: object,
    imports: Record<string, Record<string, unknown>>,
  ) => { readonly exports: Record<string, unknown> };
  Memory: new (desc: { initial: number; maximum: number; shared: boolean }) => SharedMemory;
}

/** A shared WebAssembly.Memory. */
export interface SharedMemory {
  readonly buffer: SharedArrayBuffer;
  grow(pages: number): number;
}

/** The engine's WebAssembly namespace. */
export const WA: WasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** 64 KiB. */
export const PAGE = 65536;
/** Pages of the memory's maximum (and of every kernel's memory import): 4 GiB, the Wasm32 address space. */
export const MAX_PAGES = 65536;
const ALIGN = 64;

/** What a CPU executor has allocated on the host since it was made: read by tests to prove a step allocates nothing. */
export interface CpuCounters {
  /** Times the shared memory grew. */
  readonly memoryGrowths: number;
  /** Blocks allocated in the shared memory. */
  readonly blocks: number;
  /** Typed arrays and buffers the backend created (views over the memory, host copies). */
  readonly hostArrays: number;
}

/** One shared memory with a first-fit free-list allocator (64-byte aligned blocks). */
export class CpuMemory {
  readonly memory: SharedMemory;
  /** A byte view over the whole memory (replaced when it grows). */
  u8: Uint8Array;
  /** A word view over the whole memory (replaced when it grows). */
  i32: Int32Array;
  #top = ALIGN;
  readonly #free: { at: number; bytes: number }[] = [];
  readonly #sizes = new Map<number, number>();
  #growths = 0;
  #blocks = 0;
  #arrays = 0;
  /** Called after every growth (the pool tells its threads to refresh their views). */
  onGrow: (() => void) | null = null;

  constructor(initialPages = 16) {
    this.memory = new WA.Memory({ initial: initialPages, maximum: MAX_PAGES, shared: true });
    this.u8 = new Uint8Array(this.memory.buffer);
    this.i32 = new Int32Array(this.memory.buffer);
    this.#arrays += 2;
  }

  /** Counters so far. */
  counters(): CpuCounters {
    return { memoryGrowths: this.#growths, blocks: this.#blocks, hostArrays: this.#arrays };
  }

  /** Records a host array the backend made (every `view` does; other host copies call this). */
  countArray(): void {
    this.#arrays++;
  }

  /** Allocates `bytes` (rounded up to 64), zeroed unless `zero` is false; returns the byte address. */
  alloc(bytes: number, zero = true): number {
    const size = Math.max(ALIGN, Math.ceil(bytes / ALIGN) * ALIGN);
    this.#blocks++;
    const i = this.#free.findIndex((f) => f.bytes >= size);
    let at: number;
    if (i >= 0) {
      const f = this.#free[i]!;
      at = f.at;
      if (f.bytes === size) this.#free.splice(i, 1);
      else this.#free[i] = { at: f.at + size, bytes: f.bytes - size };
      if (zero) this.u8.fill(0, at, at + size);
    } else {
      at = this.#top;
      const end = at + size;
      if (end > MAX_PAGES * PAGE)
        throw new CpuError(
          "out-of-memory",
          `the shared memory cannot hold ${size} more bytes (${this.#top} in use of 4 GiB)`,
          { bytes: size },
        );
      if (end > this.memory.buffer.byteLength) this.#grow(end);
      this.#top = end;
    }
    this.#sizes.set(at, size);
    return at;
  }

  /** Returns a block to the free list (merged with free neighbours). */
  free(at: number): void {
    const size = this.#sizes.get(at);
    if (size === undefined) return;
    this.#sizes.delete(at);
    let i = this.#free.findIndex((f) => f.at > at);
    if (i < 0) i = this.#free.length;
    this.#free.splice(i, 0, { at, bytes: size });
    const next = this.#free[i + 1];
    if (next !== undefined && at + size === next.at) this.#free.splice(i, 2, { at, bytes: size + next.bytes });
    const prev = this.#free[i - 1];
    const cur = this.#free[i]!;
    if (prev !== undefined && prev.at + prev.bytes === cur.at)
      this.#free.splice(i - 1, 2, { at: prev.at, bytes: prev.bytes + cur.bytes });
  }

  /** A typed view of `length` elements at byte address `at` (counted). */
  view<T>(Ctor: new (b: SharedArrayBuffer, offset: number, length: number) => T, at: number, length: number): T {
    this.#arrays++;
    return new Ctor(this.memory.buffer, at, length);
  }

  #grow(end: number): void {
    const have = this.memory.buffer.byteLength / PAGE;
    // Grow geometrically so staging many buffers grows the memory a few times, not once per buffer.
    const want = Math.min(MAX_PAGES, Math.max(Math.ceil(end / PAGE), Math.ceil(have * 1.5)));
    this.memory.grow(want - have);
    this.#growths++;
    this.u8 = new Uint8Array(this.memory.buffer);
    this.i32 = new Int32Array(this.memory.buffer);
    this.#arrays += 2;
    this.onGrow?.();
  }
}

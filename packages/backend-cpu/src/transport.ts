// How a thread pool starts its worker threads: the one platform-specific part of the backend. The node transport
// uses worker_threads, the browser one Web Workers; both run the same thread source over the same shared memory.

import type { SharedMemory } from "./memory.js";
import type { NativeLoader } from "./native/library.js";

/** What a worker thread is started with. */
export interface ThreadInit {
  /** The executor's shared memory. */
  readonly memory: SharedMemory;
  /** Word index of the control block. */
  readonly ctl: number;
  /** The thread's index (1 and up; the host is thread 0). */
  readonly thread: number;
}

/** A started worker thread, as the pool drives it. */
export interface ThreadHandle {
  /** Posts a load message (kernel modules), read by the worker at the next load command. */
  post(message: unknown): void;
  /** Error text the worker posted, when it can be read synchronously here (node), else undefined. */
  receive(): string | undefined;
  /** Stops the worker. */
  terminate(): void;
}

/** Starts the worker threads of a pool. */
export interface ThreadTransport {
  /** What the threads are, for the device description (`worker_threads`, `Web Workers`). */
  readonly name: string;
  /**
   * Whether a started thread comes up while the starting thread blocks (node: yes). A browser worker's script loads
   * only once its creator returns to the event loop: the pool is then awaited with `ThreadPool.started()`.
   */
  readonly startsWhileBlocked: boolean;
  /** Starts one worker thread running the pool's thread source. */
  start(init: ThreadInit): ThreadHandle;
}

/** Where an executor runs: how it starts threads, how many by default, and the CPU's name. */
export interface CpuPlatform {
  readonly transport: ThreadTransport;
  /** Threads when the options name none. */
  readonly defaultThreads: number;
  /** The CPU, for `caps.device`. */
  readonly cpu: string;
  /** Loads the platform's prebuilt native GEMV kernels (decision 0952); absent where none ship (browsers). */
  readonly native?: NativeLoader;
  /** Maps weights from their files into the shared memory (decision 1620); absent or null where it cannot. */
  readonly files?: () => FileMapper | null;
}

/** Maps a file's bytes over a weight's bytes in the shared memory instead of reading them (node on Linux). */
export interface FileMapper {
  /** The page size: a mapped weight's address and file offset must agree modulo it. */
  readonly page: number;
  /**
   * The huge page size (the kernel's PMD size, 2 MiB), where the platform maps the page cache's huge folios whole: a
   * weight whose address agrees with its file offset modulo it is read through one TLB entry per huge page instead of
   * one per page (decision 2420). Absent where the platform has none.
   */
  readonly huge?: number;
  /** The process address of `view`'s first byte (the shared memory's placement is the platform's); with `huge`. */
  address?(view: Uint8Array): number;
  /** Maps `fd`'s bytes from `offset` into `view` (in the shared memory); false, with nothing changed, where it cannot. */
  map(view: Uint8Array, fd: number, offset: number): boolean;
}

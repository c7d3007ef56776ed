// Typed errors of @poot/backend-cpu: what went wrong on the host schedule (a kernel trap on a worker, a phase-order
// violation the debug check saw, a memory budget exceeded), with the program, plan and phase it concerns.

/** Stable codes of {@link CpuError}. */
export type CpuErrorCode =
  /** A kernel threw (a Wasm trap) while running a chunk of its phase; the message carries the thread's error. */
  | "kernel-trap"
  /** The phase-order check saw a chunk of phase n start before every chunk of phase n - 1 completed. */
  | "phase-order"
  /** The shared memory cannot hold what was asked (its maximum is 4 GiB, the Wasm32 address space). */
  | "out-of-memory"
  /** A worker thread could not start or load kernels. */
  | "worker-failed"
  /** The platform cannot run the executor here (a browser page's main thread, no cross-origin isolation, no Worker). */
  | "unsupported-platform";

/** What a {@link CpuError} concerns. */
export interface CpuErrorContext {
  /** Staged program name. */
  readonly program?: string;
  /** Phase index in the step's schedule. */
  readonly phase?: number;
  /** Plan index in the compiled Program. */
  readonly plan?: number;
  /** Bytes involved (allocation size). */
  readonly bytes?: number;
}

/** An error of the CPU backend, with a stable `code` and its context. */
export class CpuError extends Error {
  override readonly name = "CpuError";
  constructor(
    readonly code: CpuErrorCode,
    message: string,
    readonly context: CpuErrorContext = {},
  ) {
    super(message);
  }
}

/** Internal invariant: throws a plain Error naming the broken assumption (a bug in this package). */
export function invariant(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`backend-cpu invariant: ${message}`);
}

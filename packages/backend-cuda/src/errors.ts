// Typed errors of @poot/backend-cuda: each carries a stable code plus the driver call, CUresult and kernel
// it concerns. Internal bugs use `invariant()`, which throws a plain Error naming the broken assumption.

/** Stable codes of {@link CudaError}. */
export type CudaErrorCode =
  /** libcuda could not be loaded (no NVIDIA driver on this machine) or has no device. */
  | "no-driver"
  /** A driver call returned a CUresult other than CUDA_SUCCESS. */
  | "driver-call"
  /** The driver's JIT (or linker) rejected a PTX module; the JIT error log is in `context.log`. */
  | "ptx-jit"
  /** A launch or copy was given arguments that do not fit the kernel or buffer (count, kind, size). */
  | "bad-argument"
  /** A graph-plan plan has no kernel kernelgen can provide for this device (context: the op and equation). */
  | "unsupported-kernel"
  /** A buffer, module, stream or graph was used after `dispose()`. */
  | "disposed"
  /** libnccl could not be loaded (NCCL is not installed), so no cross-GPU collective can run. */
  | "no-nccl"
  /** An NCCL call returned a result other than ncclSuccess. */
  | "nccl-call";

/** Context of a {@link CudaError}. */
export interface CudaErrorContext {
  /** The driver function called, e.g. `cuModuleLoadDataEx`. */
  readonly call?: string;
  /** Its CUresult as a number. */
  readonly result?: number;
  /** Its CUresult name from `cuGetErrorName`, e.g. `CUDA_ERROR_INVALID_PTX`. */
  readonly resultName?: string;
  /** The kernel (entry point) concerned. */
  readonly kernel?: string;
  /** The JIT or linker error log. */
  readonly log?: string;
  /** Any value that explains the failure (a size, a count, a path). */
  readonly value?: unknown;
}

/** A user-facing CUDA backend failure. */
export class CudaError extends Error {
  override readonly name = "CudaError";
  constructor(
    /** Stable machine-readable code. */
    readonly code: CudaErrorCode,
    message: string,
    /** What the error concerns. */
    readonly context: CudaErrorContext = {},
  ) {
    super(message);
  }
}

/** Asserts an internal invariant; a failure is a bug in backend-cuda, not bad input. */
export function invariant(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`backend-cuda invariant violated: ${message}`);
}

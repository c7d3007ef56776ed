// Typed errors of @poot/backend-rocm: each carries a stable code and the context that explains it.
// Internal bugs use `invariant()`, which throws a plain Error naming the broken assumption.

/** Stable codes of {@link RocmError}. */
export type RocmErrorCode =
  /** libamdhip64 could not be loaded from any of the paths tried (no ROCm runtime on this machine). */
  | "no_runtime"
  /** The HIP runtime loaded but reports no GPU (or `hipInit` failed). */
  | "no_device"
  /** No code object was built for the GPU's architecture (context: the GPU's arch and the ones available). */
  | "no_code_object"
  /** A code object is not a well-formed AMDGPU ELF, or its metadata note is missing or malformed, or llc/ld.lld failed. */
  | "bad_code_object"
  /** No llc / ld.lld to build code objects with (context: the paths tried). */
  | "no_toolchain"
  /** The kernel arguments given, or the layout the executor expects, disagree with the code object's metadata. */
  | "kernarg_mismatch"
  /** A HIP call returned an error; `context.call` and `context.result` name it. */
  | "hip_call";

/** Context of a {@link RocmError}. */
export interface RocmErrorContext {
  /** The HIP function called, e.g. `hipModuleLoadData`. */
  readonly call?: string;
  /** Its hipError_t as a number. */
  readonly result?: number;
  /** The kernel concerned. */
  readonly kernel?: string;
  /** Library paths tried (no_runtime). */
  readonly tried?: readonly string[];
  /** The GPU's architecture (no_code_object), e.g. `gfx942:sramecc+:xnack-`. */
  readonly arch?: string;
  /** Architectures that have code objects (no_code_object). */
  readonly available?: readonly string[];
}

/** A user-facing ROCm backend failure; `message` is one line. */
export class RocmError extends Error {
  override readonly name = "RocmError";
  constructor(
    /** Stable machine-readable code. */
    readonly code: RocmErrorCode,
    message: string,
    /** What the error concerns. */
    readonly context: RocmErrorContext = {},
  ) {
    super(message);
  }
}

/** Asserts an internal invariant; a failure is a bug in backend-rocm, not bad input. */
export function invariant(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`backend-rocm invariant: ${message}`);
}

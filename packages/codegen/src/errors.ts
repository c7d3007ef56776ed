// Typed errors of @poot/codegen: each carries a stable code and the kernel, target and construct it concerns.
// Internal bugs use `invariant()` instead, which throws a plain Error naming the broken assumption.

/** Stable codes of {@link CodegenError}. */
export type CodegenErrorCode =
  /** The target cannot express an IR construct (e.g. an op or dtype it has no spelling for). */
  | "unsupported"
  /** The device capabilities lack what the kernel needs (f16, subgroups, shared memory size, ...). */
  | "missing-capability"
  /** The kernel needs more buffers than the device can bind, even after packing. */
  | "binding-limit"
  /** The kernel IR itself is malformed (unknown value, wrong arity). */
  | "invalid-kernel";

/** Context of a {@link CodegenError}: which kernel, target and construct. */
export interface CodegenErrorContext {
  /** Kernel name. */
  readonly kernel?: string;
  /** Target name (wgsl, ptx, spirv, amdgpu, wasm). */
  readonly target?: string;
  /** The IR construct, op or dtype concerned. */
  readonly construct?: string;
  /** Any value that explains the failure (a count, a limit, tool output). */
  readonly value?: unknown;
}

/** A user-facing codegen failure. */
export class CodegenError extends Error {
  override readonly name = "CodegenError";
  constructor(
    /** Stable machine-readable code. */
    readonly code: CodegenErrorCode,
    message: string,
    /** What the error concerns. */
    readonly context: CodegenErrorContext = {},
  ) {
    super(message);
  }
}

/** Asserts an internal invariant; a failure is a bug in codegen, not bad input. */
export function invariant(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`codegen invariant violated: ${message}`);
}

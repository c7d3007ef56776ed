// Typed errors of @poot/backend-wgpu: no WebGPU, a missing feature or limit, device loss, validation and
// out-of-memory errors caught by error scopes, bad bindings; each carries a stable `code` and its context.

/** Stable codes of {@link WgpuError}. */
export type WgpuErrorCode =
  /** No WebGPU implementation: no `navigator.gpu` in the browser, or the `webgpu` package absent in Node. */
  | "no-webgpu"
  /** The implementation offers no adapter (no driver, or a blocklisted GPU). */
  | "no-adapter"
  /** A feature the caller required is not offered by the adapter. */
  | "missing-feature"
  /** A limit the caller required exceeds what the adapter offers. */
  | "limit-exceeded"
  /** The device was lost (destroyed, driver reset, or `requestDevice` failed). */
  | "device-lost"
  /** A WebGPU validation error (bad WGSL, bad binding, bad dispatch) caught by an error scope. */
  | "validation"
  /** An allocation the device could not satisfy, caught by an error scope. */
  | "out-of-memory"
  /** An implementation-internal error (e.g. a pipeline the driver could not compile). */
  | "internal"
  /** No kernel for a compiled plan: kernelgen refused its request (the plan's op and equation are named). */
  | "unsupported-kernel"
  /** A kernel argument missing, unknown, or of the wrong size for its binding. */
  | "bad-binding"
  /** Use of a disposed context, step or buffer. */
  | "disposed";

/** What a {@link WgpuError} concerns. */
export interface WgpuErrorContext {
  /** What was being done (`"createComputePipeline"`, `"submit"`, a step's label, ...). */
  readonly operation?: string;
  /** Kernel name. */
  readonly kernel?: string;
  /** Kernel hash (of its WGSL text). */
  readonly hash?: string;
  /** Buffer, binding, feature or limit name. */
  readonly key?: string;
  /** What was expected (bytes, a limit's requested value). */
  readonly expected?: number | string;
  /** What was given or found. */
  readonly actual?: number | string;
  /** The compiled graph's equation index. */
  readonly eqn?: number;
  /** The device-lost reason (`"destroyed"` or `"unknown"`). */
  readonly reason?: string;
}

/** Every error this package throws for bad input or a failing device. */
export class WgpuError extends Error {
  /** Stable code. */
  readonly code: WgpuErrorCode;
  /** What it concerns. */
  readonly context: WgpuErrorContext;

  constructor(code: WgpuErrorCode, message: string, context: WgpuErrorContext = {}) {
    super(`${code}: ${message}`);
    this.name = "WgpuError";
    this.code = code;
    this.context = context;
  }
}

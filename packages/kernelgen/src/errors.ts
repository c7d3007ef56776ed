// Typed errors of @poot/kernelgen: requests a synthesizer cannot serve and library lookups that fail.
// Each error carries a stable `code` and the context it concerns (synthesizer, parameter, value).

export { invariant } from "@poot/kernel-dsl";

/** Codes of kernelgen failures. */
export type KernelgenErrorCode =
  | "unknown_kernel" // no imported kernel of that name
  | "bad_asset" // an imported kernel's asset is missing or unreadable
  | "bad_shape" // a shape or stride the synthesizer cannot serve (rank, zero size, mismatch)
  | "bad_dtype" // a dtype the synthesizer does not accept for that operand
  | "bad_param" // a parameter out of range (tile larger than the workgroup limit, unknown op, ...)
  | "exceeds_caps" // the request needs more than the device caps allow (shared memory, workgroup size)
  | "bad_format"; // a packed format descriptor the dequant generator cannot compile

/** Where an error arose. */
export interface KernelgenErrorContext {
  /** Synthesizer or library function. */
  readonly synth?: string;
  /** Parameter / operand name. */
  readonly param?: string;
  /** Offending value. */
  readonly value?: unknown;
}

/** A request kernelgen cannot serve, with a stable `code` and its context. */
export class KernelgenError extends Error {
  override readonly name = "KernelgenError";
  constructor(
    readonly code: KernelgenErrorCode,
    message: string,
    readonly context: KernelgenErrorContext = {},
  ) {
    const where = [context.synth, context.param].filter((x) => x !== undefined).join(".");
    super(where === "" ? message : `${where}: ${message}`);
  }
}

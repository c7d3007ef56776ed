// Typed errors of @poot/kernel-dsl: validation, .kir.json parsing, interpretation, pootc, and invariant().
// Each error carries a stable `code` and the context it concerns (kernel, node path, array, index).

/** Codes of IR validation failures. */
export type KernelValidationCode =
  | "bad_name" // not an identifier
  | "duplicate_name" // a name declared twice (params, arrays, locals share one namespace)
  | "unknown_name" // reference to an undeclared local / param / array / spec
  | "type_mismatch" // an operand or declared type disagrees with what the node requires
  | "bad_operand_type" // op not defined on this type (e.g. shl on f32, exp on u32)
  | "bad_literal" // literal out of range / not integral / not exact in f32
  | "bad_size" // workgroup size or array length not a positive integer (or unknown spec)
  | "bad_binding" // duplicate or negative binding index
  | "assign_to_immutable" // assign to a let, loop variable or param
  | "access_violation" // store to a read buffer or load from a write-only buffer
  | "atomic_misuse" // plain access to an atomic array, atomic op on a plain array, bad atomic type/op
  | "bad_control_flow" // break/continue outside a loop
  | "bad_subgroup" // subgroup op on an unsupported type or missing/extra lane operand
  | "bad_mma" // mma with an unknown shape or input type
  | "bad_vector"; // wrong component count, lane out of range

/** One validation problem at a node path like `body[3].then[0].value.a`. */
export interface KernelValidationIssue {
  readonly code: KernelValidationCode;
  readonly path: string;
  readonly message: string;
}

/** Thrown by `assertValidKernel`: the kernel and every issue found (the first one is in `code`/`path`). */
export class KernelValidationError extends Error {
  override readonly name = "KernelValidationError";
  readonly code: KernelValidationCode;
  readonly path: string;
  constructor(
    readonly kernel: string,
    readonly issues: readonly KernelValidationIssue[],
  ) {
    const first = issues[0];
    if (first === undefined) throw new Error("invariant: KernelValidationError with no issues");
    super(
      `kernel ${kernel}: ${first.code} at ${first.path}: ${first.message}` +
        (issues.length > 1 ? ` (+${issues.length - 1} more)` : ""),
    );
    this.code = first.code;
    this.path = first.path;
  }
}

/** Codes of .kir.json decoding failures. */
export type KirJsonCode = "bad_json" | "bad_format" | "bad_version";

/** Thrown by `parseKirJson` for text that is not a valid .kir.json document. */
export class KirJsonError extends Error {
  override readonly name = "KirJsonError";
  constructor(
    readonly code: KirJsonCode,
    message: string,
    readonly file?: string,
  ) {
    super(file === undefined ? message : `${file}: ${message}`);
  }
}

/** Codes of interpreter failures. */
export type KernelRuntimeCode =
  | "bad_launch" // missing/mistyped buffer, uniform or spec, bad grid or subgroup size
  | "out_of_bounds" // load/store/atomic index outside its array
  | "race" // workgroup memory written by one thread and accessed by another between two barriers
  | "barrier_divergence" // threads of a workgroup reached different barriers, or one exited while others wait
  | "subgroup_divergence" // lanes of a subgroup did not all reach the same subgroup op
  | "division_by_zero"; // integer division or remainder by zero

/** Thrown by `interpret`: names the kernel and, where it applies, the array, index and threads. */
export class KernelRuntimeError extends Error {
  override readonly name = "KernelRuntimeError";
  constructor(
    readonly code: KernelRuntimeCode,
    readonly kernel: string,
    message: string,
    readonly detail: {
      readonly array?: string;
      readonly index?: number;
      readonly length?: number;
      readonly workgroup?: readonly [number, number, number];
      readonly threads?: readonly number[];
    } = {},
  ) {
    super(`kernel ${kernel}: ${code}: ${message}`);
  }
}

/** Codes of pootc failures. */
export type PootcCode = "no_sources" | "missing_esbuild" | "bundle_failed" | "bad_export" | "duplicate_kernel";

/** Thrown by `compileKernelSources` (pootc). */
export class PootcError extends Error {
  override readonly name = "PootcError";
  constructor(
    readonly code: PootcCode,
    message: string,
    readonly file?: string,
  ) {
    super(file === undefined ? message : `${file}: ${message}`);
  }
}

/** Thrown by the DSL builder for misuse (e.g. a statement outside a kernel body, mixing types). */
export class KernelDslError extends Error {
  override readonly name = "KernelDslError";
  readonly code = "dsl_misuse" as const;
  constructor(
    readonly kernel: string,
    message: string,
  ) {
    super(`kernel ${kernel}: ${message}`);
  }
}

/** Internal bug check: throws when `cond` is false. */
export function invariant(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`invariant failed: ${message}`);
}

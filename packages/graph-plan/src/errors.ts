// Typed errors of the compiler: bad targets/options, and planner refusals that name the equation and
// the device capability that is missing. Internal bugs go through `invariant`.

/** Stable machine-readable error codes raised by `@poot/graph-plan`. */
export type PlanErrorCode =
  /** A target or caps object is malformed (a limit that is not a positive integer, an unknown kind). */
  | "bad-target"
  /** A compile option is out of range. */
  | "bad-option"
  /** The input graph does not validate. */
  | "invalid-graph"
  /** The planner cannot place an equation on the target: a capability is missing or too small. */
  | "missing-capability"
  /** The planner has no kernel strategy for this op. */
  | "unsupported-op"
  /** Tensor parallelism: a dimension a shard must split does not divide by the number of ranks. */
  | "tp-indivisible"
  /** Tensor parallelism: the graph has a shape the sharding pass cannot split or keep whole (names the value). */
  | "tp-unsupported";

/** Where an error happened. */
export interface PlanErrorContext {
  /** Equation index in the optimized graph. */
  readonly eqn?: number;
  /** Op name of that equation. */
  readonly op?: string;
  /** The value the equation defines (or the offending value). */
  readonly value?: number;
  /** The capability that is missing or too small (a `DeviceCaps` field name). */
  readonly capability?: string;
  /** What the equation needs of that capability. */
  readonly needed?: number | string;
  /** What the target offers. */
  readonly available?: number | string;
  /** An option or target field name. */
  readonly key?: string;
}

/** The one error class of the package; switch on `code`. */
export class PlanError extends Error {
  /** Stable error code. */
  readonly code: PlanErrorCode;
  /** Equation / capability context. */
  readonly context: PlanErrorContext;

  /** Builds an error whose message is prefixed with its code and context. */
  constructor(code: PlanErrorCode, message: string, context: PlanErrorContext = {}) {
    super(`[${code}] ${describe(context)}${message}`);
    this.name = "PlanError";
    this.code = code;
    this.context = context;
  }
}

function describe(c: PlanErrorContext): string {
  const parts: string[] = [];
  if (c.eqn !== undefined) parts.push(`eqn #${c.eqn}`);
  if (c.op !== undefined) parts.push(`op ${c.op}`);
  if (c.value !== undefined) parts.push(`value %${c.value}`);
  if (c.capability !== undefined) parts.push(`capability ${c.capability}`);
  if (c.needed !== undefined) parts.push(`needs ${c.needed}`);
  if (c.available !== undefined) parts.push(`has ${c.available}`);
  if (c.key !== undefined) parts.push(`key ${c.key}`);
  return parts.length > 0 ? `${parts.join(" ")}: ` : "";
}

/** Thrown by `invariant` on internal bugs (never on bad user input). */
export class PlanInvariantError extends Error {
  /** Always "invariant". */
  readonly code = "invariant" as const;
}

/** Asserts an internal invariant; a failure is a bug in graph-plan, not bad input. */
export function invariant(cond: unknown, message: string): asserts cond {
  if (!cond) throw new PlanInvariantError(`invariant failed: ${message}`);
}

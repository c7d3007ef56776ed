// Typed errors of the graph IR: every malformed graph, bad shape or bad binding raises a GraphError.
// Each error carries a stable `code` plus the equation, op and value ids it concerns.

/** Stable machine-readable error codes raised by `@poot/graph-ir`. */
export type GraphErrorCode =
  | "shape-mismatch"
  | "dtype-mismatch"
  | "bad-axis"
  | "bad-param"
  | "bad-arity"
  | "unknown-op"
  | "duplicate-op"
  | "ssa-violation"
  | "order-violation"
  | "storage-violation"
  | "state-pairing"
  | "unknown-value"
  | "unbound-const"
  | "unbound-slot"
  | "unbound-state"
  | "binding-mismatch"
  | "index-out-of-range"
  | "packed-format"
  | "json-version"
  | "json-parse";

/** Where in a graph an error happened; every field is optional because not every error has all of them. */
export interface GraphErrorContext {
  /** Index of the equation in `graph.eqns`. */
  readonly eqn?: number;
  /** Op name of that equation. */
  readonly op?: string;
  /** Value ids involved (inputs, the output, the offending value). */
  readonly values?: readonly number[];
  /** Const/slot/state key, output name or format name involved. */
  readonly key?: string;
  /** JSON path for parse errors. */
  readonly path?: string;
}

/** The one error class of the package; switch on `code`. */
export class GraphError extends Error {
  /** Stable error code. */
  readonly code: GraphErrorCode;
  /** Equation / value / key context. */
  readonly context: GraphErrorContext;

  /** Builds an error whose message is prefixed with its code and context. */
  constructor(code: GraphErrorCode, message: string, context: GraphErrorContext = {}) {
    super(`[${code}] ${describeContext(context)}${message}`);
    this.name = "GraphError";
    this.code = code;
    this.context = context;
  }
}

function describeContext(c: GraphErrorContext): string {
  const parts: string[] = [];
  if (c.eqn !== undefined) parts.push(`eqn #${c.eqn}`);
  if (c.op !== undefined) parts.push(`op ${c.op}`);
  if (c.values !== undefined && c.values.length > 0) parts.push(`values ${c.values.map((v) => `%${v}`).join(",")}`);
  if (c.key !== undefined) parts.push(`key "${c.key}"`);
  if (c.path !== undefined) parts.push(`at ${c.path}`);
  return parts.length > 0 ? `${parts.join(" ")}: ` : "";
}

/** Thrown by `invariant` on internal bugs (never on bad user input). */
export class InvariantError extends Error {
  /** Always "invariant". */
  readonly code = "invariant" as const;
}

/** Asserts an internal invariant; a failure is a bug in graph-ir, not bad input. */
export function invariant(cond: unknown, message: string): asserts cond {
  if (!cond) throw new InvariantError(`invariant failed: ${message}`);
}

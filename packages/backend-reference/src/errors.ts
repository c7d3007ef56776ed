// Errors of @poot/backend-reference: caller mistakes are @poot/executor's typed ExecutorErrors (the contract's); what
// is left here is the internal-bug check.

/** Throws an internal-bug error when `cond` is false (never for bad caller input). */
export function invariant(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error(`@poot/backend-reference internal error: ${message}`);
}

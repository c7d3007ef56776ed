/**
 * The poot graph IR.
 * @packageDocumentation
 */
/** Placeholder version marker. */
export const VERSION = "0.0.0";

/**
 * @poot/backend-reference: the two reference backends of the executor contract. `eval` runs graph-ir's reference
 * evaluator (weights folded once; the literal oracle with `foldWeights: false`); `interp` compiles each graph with
 * graph-plan and runs every plan's kernel in the kernel-dsl interpreter. Slow, exact, and the oracle the device
 * backends are checked against.
 * @packageDocumentation
 */
export { EVAL_CAPS, createEvalExecutor } from "./eval-executor.js";
export type { EvalExecutorOptions } from "./eval-executor.js";
export { INTERP_CAPS, createInterpExecutor } from "./interp-executor.js";
export type { InterpExecutorOptions } from "./interp-executor.js";

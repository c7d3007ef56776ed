// The eval executor runs the conformance suite exactly (tolerance 0) in both modes — weight-only equations
// folded once, and `evaluate` every step: it validates the suite's plumbing, State and error paths.
import { createEvalExecutor } from "@poot/backend-reference";
import { runConformance } from "@poot/executor/conformance";

runConformance("eval (folded weights)", () => createEvalExecutor(), { dtypes: ["f32", "bf16", "f16"], tolerance: 0 });
runConformance("eval (evaluate per step)", () => createEvalExecutor({ foldWeights: false }), {
  dtypes: ["f32", "bf16", "f16"],
  tolerance: 0,
});

// The eval executor runs the conformance suite exactly (tolerance 0): it validates the suite's plumbing,
// State handling across steps and error paths, with the same calls any backend makes.
import { createEvalExecutor } from "@poot/executor";
import { runConformance } from "@poot/executor/conformance";

runConformance("eval", createEvalExecutor, { dtypes: ["f32", "bf16", "f16"], tolerance: 0 });

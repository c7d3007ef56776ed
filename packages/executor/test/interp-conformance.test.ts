// The interpreter executor through the executor conformance suite (public API, as a backend author uses it):
// every case's compiled Program runs in the kernel-dsl interpreter and is checked step by step against `evaluate`.
import { createInterpExecutor } from "@poot/executor";
import { runConformance } from "@poot/executor/conformance";

// f32 arithmetic in the kernels against the float64 oracle: the suite's default 1e-5 relative bound.
runConformance("interp", () => createInterpExecutor(), { dtypes: ["f32", "bf16"] });

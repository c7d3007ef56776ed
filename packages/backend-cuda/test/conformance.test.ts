// @poot/executor's conformance suite on the CUDA executor: every case step by step against graph-ir's
// evaluate, capture/replay, lane copies and typed errors. Skips without a CUDA driver, saying so.
import { runConformance } from "@poot/executor/conformance";
import { createCudaExecutor, loadDriver } from "@poot/backend-cuda";

function missingDriver(): string | undefined {
  try {
    loadDriver();
    return undefined;
  } catch {
    return "no CUDA driver on this machine";
  }
}
const skip = missingDriver();

runConformance("cuda", () => createCudaExecutor(), {
  dtypes: ["f32", "f16", "bf16"],
  ...(skip !== undefined ? { skip } : {}),
});

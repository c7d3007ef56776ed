// @poot/executor's conformance suite on the ROCm executor: every case step by step against graph-ir's evaluate,
// capture/replay (HIP graphs), lane copies and typed errors. Runs where a HIP runtime and a supported AMD GPU exist
// (ROCM_PATH names the ROCm root); skips otherwise, naming why. It has never run: no AMD GPU is reachable here.
import { createRocmExecutor, HipRuntime, rocmPlanCaps } from "@poot/backend-rocm";
import { runConformance } from "@poot/executor/conformance";

const rocmPath = process.env["ROCM_PATH"];
const options = rocmPath === undefined ? {} : { rocmPath };

/** Why the suite cannot run here, or undefined. */
function skipReason(): string | undefined {
  try {
    const hip = HipRuntime.open(options);
    rocmPlanCaps(hip.gcnArchName);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}
const skip = skipReason();

runConformance("rocm", () => createRocmExecutor(options), {
  dtypes: ["f32", "f16", "bf16"],
  ...(skip !== undefined ? { skip } : {}),
});

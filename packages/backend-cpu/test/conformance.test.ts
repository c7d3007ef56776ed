// @poot/executor's conformance suite on the CPU executor, as a backend author runs it: every case step by step against
// graph-ir's evaluate, capture/replay, lane copies, typed errors and device bytes, with two threads and with one.
import { createCpuExecutor } from "@poot/backend-cpu";
import { runConformance } from "@poot/executor/conformance";

runConformance("cpu", () => createCpuExecutor({ threads: 2 }), { dtypes: ["f32", "f16", "bf16"] });
runConformance("cpu (1 thread, one region per dispatch)", () => createCpuExecutor({ threads: 1, fused: false }), {
  dtypes: ["f32", "bf16"],
});

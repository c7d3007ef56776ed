// GPU entry point for the CUDA executor: @poot/executor's conformance suite (bundled with tools/vitest-shim.ts
// in place of vitest) and a check that replaying a captured step allocates no device memory.

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { conformanceCases, runConformance } from "@poot/executor/conformance";
import { createCudaExecutor } from "@poot/backend-cuda";
import { runRegistered } from "./vitest-shim.js";

const outDir = process.env.OUT ?? ".gpu/out";
mkdirSync(outDir, { recursive: true });
const cacheDir = "/tmp/poot-cuda-cache";

runConformance("cuda", () => createCudaExecutor({ cacheDir }), { dtypes: ["f32", "f16", "bf16"] });
const t0 = performance.now();
const results = runRegistered();
const seconds = (performance.now() - t0) / 1000;

// A captured step replayed many times must not allocate: compare the pool's driver allocations.
function noAllocation(): { ok: boolean; detail: string } {
  const exec = createCudaExecutor({ cacheDir });
  try {
    const c = conformanceCases("bf16").find((x) => x.name.startsWith("state"))!;
    exec.bindWeights((key) => c.weights[key]!);
    const prog = exec.stage(c.graph, { name: "alloc" });
    const st = prog.createState();
    for (const [k, v] of Object.entries(c.steps[0]!)) prog.writeSlot(k, v);
    prog.run(st);
    prog.capture(st);
    prog.replay();
    const before = exec.device.ctx.pool.stats().driverAllocations;
    for (let i = 0; i < 100; i++) {
      for (const [k, v] of Object.entries(c.steps[i % c.steps.length]!)) prog.writeSlot(k, v);
      prog.replay();
      prog.run(st);
    }
    const after = exec.device.ctx.pool.stats().driverAllocations;
    return {
      ok: after === before,
      detail: `${after - before} driver allocations in 100 replays + 100 runs (pool reserved ${exec.device.ctx.pool.stats().reservedBytes} B)`,
    };
  } finally {
    exec.dispose();
  }
}
let alloc: { ok: boolean; detail: string };
try {
  alloc = noAllocation();
} catch (e) {
  alloc = { ok: false, detail: `threw ${(e as Error).stack}` };
}

const failed = results.filter((r) => r.status === "fail");
for (const r of results)
  console.log(`${r.status.padEnd(4)} ${r.name}${r.error ? `\n${r.error.split("\n").slice(0, 6).join("\n")}` : ""}`);
console.log(`${alloc.ok ? "pass" : "FAIL"} no device allocation per step: ${alloc.detail}`);
console.log(
  `conformance: ${results.length - failed.length - results.filter((r) => r.status === "skip").length} passed, ${failed.length} failed, ${seconds.toFixed(1)} s`,
);
writeFileSync(
  join(outDir, "gpu-executor.json"),
  JSON.stringify({ date: new Date().toISOString(), results, alloc, seconds }, null, 1),
);
process.exit(failed.length === 0 && alloc.ok ? 0 : 1);

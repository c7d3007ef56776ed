// GPU-machine entry point (bundled by packages/backend-vulkan/tools/gpu-bundle.sh into .gpu-vk/bin/): for the
// vulkan and wgpu backends on the machine's Vulkan driver (the H200's), in this order:
//   1. @poot/executor's conformance suite, unchanged (vitest's describe/it/expect come from a small shim);
//   2. every fixtures/hf family (copied into the bundle): prefill and per-position decode logits against
//      transformers' float64 logits (max |Δ| / max |ref|) and the greedy ids;
//   3. `poot bench` on BENCH_MODEL (models/demo, or the Llama-3.2-1B-shaped bf16 folder tools/random-model/make-hf.mjs
//      writes) for decode tok/s, with dispatches per decode token against `poot compile`'s prediction.
// usage: [BACKEND=vulkan|wgpu] node gpu-apis-h200.js FIXTURES_HF_DIR BENCH_MODEL [OUT_DIR]. Writes
// gpu-apis-h200-<backends>.json to OUT_DIR. Run one process per backend: Dawn and the Vulkan executor each load
// the Vulkan driver, and in one process (on lavapipe) that ended in a segfault.
// SKIP_CONFORMANCE=1 / SKIP_FIXTURES=1 leave a phase out (smoke runs on lavapipe).

import * as fs from "node:fs";
import * as path from "node:path";
import { describe } from "vitest";
import { runConformance } from "@poot/executor/conformance";
import { probeVulkan } from "@poot/backend-vulkan";
import { bufferIo, runCli } from "@poot/cli";
import { createExecutor } from "../src/commands/backends.js";
import { checkHfFamily } from "./hf-family.js";

// The shim's registry runner (vitest itself has none): the bundle aliases "vitest" to the shim module.
import { runRegistered } from "vitest";

const [fixtures, demo, outArg] = process.argv.slice(2);
if (fixtures === undefined || demo === undefined) {
  console.error("usage: node gpu-apis-h200.js FIXTURES_HF_DIR BENCH_MODEL [OUT_DIR]");
  process.exit(2);
}
const outDir = outArg ?? process.env.OUT ?? "/tmp/gpu-apis-out";
fs.mkdirSync(outDir, { recursive: true });
const BACKENDS = (process.env.BACKEND === undefined ? ["vulkan", "wgpu"] : [process.env.BACKEND]) as (
  | "vulkan"
  | "wgpu"
)[];
if (BACKENDS.some((b) => b !== "vulkan" && b !== "wgpu"))
  throw new Error(`BACKEND must be vulkan or wgpu, got ${process.env.BACKEND}`);
const FAMILIES = ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"];
const report: Record<string, unknown> = { date: new Date().toISOString(), node: process.version };
let failures = 0;
const outFile = path.join(outDir, `gpu-apis-h200-${BACKENDS.join("-")}.json`);
const save = (): void => fs.writeFileSync(outFile, JSON.stringify(report, null, 1));
const since = (t0: number): number => Math.round(performance.now() - t0) / 1000;

const probe = probeVulkan();
report.probe = probe.ok ? probe.devices.map((d) => ({ ...d, handle: String(d.handle) })) : probe;
console.log("vulkan probe:", JSON.stringify(report.probe));
if (!probe.ok) {
  save();
  process.exit(1);
}

// 1. Conformance: one registry, both backends (a fresh executor per case, as the suite does).
if (process.env.SKIP_CONFORMANCE !== "1") {
  const t0 = performance.now();
  for (const b of BACKENDS)
    describe(b, () => runConformance(b, () => createExecutor(b, "gpu-apis-h200"), { dtypes: ["f32", "f16", "bf16"] }));
  const results = runRegistered();
  const failed = results.filter((r) => r.status === "fail");
  failures += failed.length;
  report.conformance = {
    seconds: since(t0),
    passed: results.filter((r) => r.status === "pass").length,
    failed,
    skipped: results.filter((r) => r.status === "skip").length,
  };
  for (const r of failed) console.log(`FAIL ${r.name}: ${r.error}`);
  console.log(`conformance: ${results.length - failed.length}/${results.length} ok in ${since(t0)} s`);
  save();
}

// 2. The fixture families, prefill and decode, as packages/cli/test/gpu-fixtures.ts checks them on lavapipe.
function family(backend: string, fam: string): Record<string, unknown> {
  const executor = createExecutor(backend, "gpu-apis-h200");
  const device = executor.caps.device;
  return { ...checkHfFamily(path.join(fixtures!, fam), executor, "f32", 1e-3), device };
}

const fams: Record<string, Record<string, unknown>> = {};
report.fixtures = fams;
for (const b of process.env.SKIP_FIXTURES === "1" ? [] : BACKENDS) {
  fams[b] = {};
  for (const fam of FAMILIES) {
    const t0 = performance.now();
    let r: Record<string, unknown>;
    try {
      r = family(b, fam);
    } catch (e) {
      r = { ok: false, error: (e as Error).stack ?? String(e) };
    }
    r.seconds = since(t0);
    if (r.ok !== true) failures++;
    fams[b]![fam] = r;
    console.log(`fixture ${b} ${fam}: ${JSON.stringify(r)}`);
    save();
  }
}

// 3. poot bench on BENCH_MODEL, and the dispatch count poot compile predicts for the same context and KV layout.
async function poot(argv: string[]): Promise<unknown> {
  const io = bufferIo();
  const code = await runCli(argv, { io });
  if (code !== 0) throw new Error(`poot ${argv.join(" ")} exited ${code}: ${io.stderr()}`);
  return JSON.parse(io.stdout());
}
// BENCH_P / BENCH_G / BENCH_RUNS shorten a smoke run of the bundle on lavapipe; the defaults are what is recorded.
const P = Number(process.env.BENCH_P ?? 128),
  G = Number(process.env.BENCH_G ?? 64),
  RUNS = process.env.BENCH_RUNS ?? "3";
// BENCH_HFUSION=grouped|shared-epilogue: bench and prediction with that --horizontal-fusion (decision 0402).
const HF = process.env.BENCH_HFUSION === undefined ? [] : ["--horizontal-fusion", process.env.BENCH_HFUSION];
const benches: Record<string, unknown> = {};
report.bench = benches;
for (const b of BACKENDS) {
  try {
    const r = (await poot([
      "bench",
      demo,
      "--backend",
      b,
      "--prompt-tokens",
      String(P),
      "--gen-tokens",
      String(G),
      "--runs",
      RUNS,
      ...HF,
      "--json",
    ])) as {
      decodeTokS: number;
      prefillTokS: number;
      decodeDispatchesPerToken: number | null;
      kvLayout: { pageSize: number; pages: number };
    };
    // The prediction for the graph bench ran: the runtime's paged layout (decision 0704).
    const predicted = (await poot([
      "compile",
      demo,
      "--target",
      b,
      "--mode",
      "decode",
      "--context",
      String(P + G),
      "--page-size",
      String(r.kvLayout.pageSize),
      "--pages",
      String(r.kvLayout.pages),
      ...HF,
      "--json",
    ])) as { fusedDispatches: number };
    const ok = r.decodeDispatchesPerToken === predicted.fusedDispatches;
    if (!ok) failures++;
    benches[b] = { ...r, predictedDispatchesPerToken: predicted.fusedDispatches, dispatchesMatch: ok };
  } catch (e) {
    failures++;
    benches[b] = { error: (e as Error).stack ?? String(e) };
  }
  console.log(`bench ${b}: ${JSON.stringify(benches[b])}`);
  save();
}

report.failures = failures;
save();
console.log(`${failures} failure(s); report in ${outFile}`);
process.exit(failures === 0 ? 0 : 1);

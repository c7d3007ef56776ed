// GPU entry point: the shared fixtures on the CUDA executor against their own references (not against another
// executor), as packages/cli/test/cpu-fixtures.test.ts checks the CPU backend:
//   1. every fixtures/hf family, f32 and bf16 weights: prefill logits and every decode row (one token at a time,
//      prompt then the reference continuation) within 1e-3 of transformers' float64 logits (max |Δ| / max |ref|),
//      greedy ids equal;
//   2. every fixtures/gguf file, weights kept packed: prompt logits in prefill chunks of 8 (positions 7, 15) and the
//      last four prompt positions decoded one token at a time, within 1e-3 of the f64 forward of the stored weights.
// usage: [FIXTURES_WEIGHTS=f32|bf16] node .gpu/cuda-fixtures.gpu.mjs FIXTURES_DIR (holding hf/ and gguf/)
//   -> stdout and $OUT/cuda-fixtures.json
import * as fs from "node:fs";
import * as path from "node:path";
import { createCudaExecutor } from "@poot/backend-cuda";
import { FixtureChecks, checkGgufPrompt, readF32 } from "./fixture-checks.js";
import { checkHfFamily } from "./hf-family.js";

const [fixtures] = process.argv.slice(2);
if (fixtures === undefined) throw new Error("usage: cuda-fixtures.gpu.mjs FIXTURES_DIR");
const TOL = 1e-3;
const outDir = process.env.OUT ?? ".gpu/out";
fs.mkdirSync(outDir, { recursive: true });
const newExecutor = () => createCudaExecutor({ cacheDir: "/tmp/poot-cuda-cache" });

function hfFamily(fam: string, weights: "f32" | "bf16"): Record<string, unknown> {
  const { ids: _, ...r } = checkHfFamily(path.join(fixtures!, "hf", fam), newExecutor(), weights, TOL);
  return r;
}

function ggufFile(fam: string, type: string): Record<string, unknown> {
  const dir = path.join(fixtures!, "gguf", fam);
  const ref = JSON.parse(fs.readFileSync(path.join(dir, `reference-${type}.json`), "utf8")) as { prompt_ids: number[] };
  const f64 = readF32(path.join(dir, `f64-logits-${type}.bin`));
  const V = f64.length / ref.prompt_ids.length;
  const file = path.join(dir, `model-${type}.gguf`);
  const r = checkGgufPrompt(file, newExecutor(), ref.prompt_ids, (p) => f64.subarray(p * V, (p + 1) * V));
  const fileBytes = fs.statSync(file).size;
  return {
    ok: r.prefillRelErr <= TOL && r.decodeRelErr <= TOL && r.weightsHeld <= fileBytes,
    prefillRelErr: r.prefillRelErr,
    decodeRelErr: r.decodeRelErr,
    weightsHeld: r.weightsHeld,
    fileBytes,
  };
}

const report: Record<string, unknown> = { date: new Date().toISOString(), tolerance: TOL };
const checks = new FixtureChecks((name, r) => console.log(`${name}: ${JSON.stringify(r)}`));
const { results } = checks;
report.results = results;
const check = checks.check.bind(checks);
// FIXTURES_WEIGHTS=bf16 (or f32) checks the hf families with one weight dtype only (a shorter device call).
const hfWeights = (["f32", "bf16"] as const).filter(
  (w) => process.env.FIXTURES_WEIGHTS === undefined || process.env.FIXTURES_WEIGHTS === w,
);
for (const fam of ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"])
  for (const w of hfWeights) check(`hf ${fam} ${w}`, () => hfFamily(fam, w));
const ggufDir = path.join(fixtures, "gguf");
for (const fam of fs.readdirSync(ggufDir).filter((f) => fs.statSync(path.join(ggufDir, f)).isDirectory())) {
  // Files left out of a size-limited bundle are reported, not failed.
  for (const type of ["F32", "F16", "Q8_0", "Q4_K_M"]) {
    if (fs.existsSync(path.join(ggufDir, fam, `model-${type}.gguf`)))
      check(`gguf ${fam} ${type}`, () => ggufFile(fam, type));
    else results[`gguf ${fam} ${type}`] = { skipped: "not in this fixtures folder" };
  }
}
report.failures = checks.failures;
fs.writeFileSync(path.join(outDir, "cuda-fixtures.json"), JSON.stringify(report, null, 1));
console.log(`${checks.failures} failure(s) of ${Object.keys(results).length}`);
process.exit(checks.failures === 0 ? 0 : 1);

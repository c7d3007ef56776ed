// GPU entry point: the shared fixtures on the CUDA executor against their own references (not against another
// executor), as packages/serve/test/cpu-fixtures.test.ts checks the CPU backend:
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
import { LoadedModel, openSafetensors } from "@poot/models";
import { Engine, argmax } from "@poot/runtime";

const [fixtures] = process.argv.slice(2);
if (fixtures === undefined) throw new Error("usage: cuda-fixtures.gpu.mjs FIXTURES_DIR");
const TOL = 1e-3;
const outDir = process.env.OUT ?? ".gpu/out";
fs.mkdirSync(outDir, { recursive: true });
const newExecutor = () => createCudaExecutor({ cacheDir: "/tmp/poot-cuda-cache" });

/** max |a - ref| / max |ref| (the fixtures README's agreement measure); NaN counts as a failure. */
function relErr(a: Float32Array, ref: Float32Array): number {
  let d = 0, m = 0;
  for (let i = 0; i < ref.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - ref[i]!));
    m = Math.max(m, Math.abs(ref[i]!));
  }
  return Number.isNaN(d) ? Infinity : d / m;
}

function readF32(file: string): Float32Array {
  const b = fs.readFileSync(file);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

function hfFamily(fam: string, weights: "f32" | "bf16"): Record<string, unknown> {
  const dir = path.join(fixtures!, "hf", fam);
  const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as { prompt_ids: number[]; greedy_ids: number[] };
  const full = openSafetensors(path.join(dir, "reference.safetensors")).readF32Sync("full_logits");
  const executor = newExecutor();
  const engine = new Engine(LoadedModel.open(dir, { weights }), { executor, context: 64, tokenizer: null });
  try {
    const V = engine.config.vocabSize, T = ref.prompt_ids.length;
    const row = (r: number): Float32Array => full.subarray(r * V, (r + 1) * V);
    const pre = engine.openSession();
    const prefill = relErr(pre.step(ref.prompt_ids), row(T - 1));
    pre.release();
    const s = engine.openSession();
    let decode = 0;
    let logits = new Float32Array(0);
    for (let t = 0; t < T; t++) {
      logits = s.step([ref.prompt_ids[t]!]);
      decode = Math.max(decode, relErr(logits, row(t)));
    }
    const ids: number[] = [];
    for (let g = 0; g < ref.greedy_ids.length; g++) {
      ids.push(argmax(logits));
      if (g + 1 === ref.greedy_ids.length) break;
      logits = s.step([ref.greedy_ids[g]!]);
      decode = Math.max(decode, relErr(logits, row(T + g)));
    }
    s.release();
    const idsEqual = ids.length === ref.greedy_ids.length && ids.every((x, i) => x === ref.greedy_ids[i]);
    return { ok: prefill <= TOL && decode <= TOL && idsEqual, prefillRelErr: prefill, decodeRelErr: decode, idsEqual };
  } finally {
    engine.close();
    executor.dispose();
  }
}

function ggufFile(fam: string, type: string): Record<string, unknown> {
  const dir = path.join(fixtures!, "gguf", fam);
  const ref = JSON.parse(fs.readFileSync(path.join(dir, `reference-${type}.json`), "utf8")) as { prompt_ids: number[] };
  const f64 = readF32(path.join(dir, `f64-logits-${type}.bin`));
  const executor = newExecutor();
  const engine = Engine.load(path.join(dir, `model-${type}.gguf`), { executor, context: 24, prefillChunk: 8, tokenizer: null });
  try {
    const V = engine.config.vocabSize, T = ref.prompt_ids.length;
    const want = (p: number): Float32Array => f64.subarray(p * V, (p + 1) * V);
    const s = engine.openSession();
    let prefill = 0, decode = 0;
    for (const end of [8, 16]) prefill = Math.max(prefill, relErr(s.step(ref.prompt_ids.slice(s.length, end)), want(end - 1)));
    for (let p = 16; p < T; p++) decode = Math.max(decode, relErr(s.step([ref.prompt_ids[p]!]), want(p)));
    s.release();
    const held = executor.deviceBytes().weights, file = fs.statSync(path.join(dir, `model-${type}.gguf`)).size;
    return { ok: prefill <= TOL && decode <= TOL && held <= file, prefillRelErr: prefill, decodeRelErr: decode, weightsHeld: held, fileBytes: file };
  } finally {
    engine.close();
    executor.dispose();
  }
}

const report: Record<string, unknown> = { date: new Date().toISOString(), tolerance: TOL };
const results: Record<string, Record<string, unknown>> = {};
report.results = results;
let failures = 0;
function check(name: string, f: () => Record<string, unknown>): void {
  const t0 = performance.now();
  let r: Record<string, unknown>;
  try {
    r = f();
  } catch (e) {
    r = { ok: false, error: (e as Error).stack ?? String(e) };
  }
  r.seconds = Math.round(performance.now() - t0) / 1000;
  if (r.ok !== true) failures++;
  results[name] = r;
  console.log(`${name}: ${JSON.stringify(r)}`);
}
// FIXTURES_WEIGHTS=bf16 (or f32) checks the hf families with one weight dtype only (a shorter device call).
const hfWeights = (["f32", "bf16"] as const).filter((w) => process.env.FIXTURES_WEIGHTS === undefined || process.env.FIXTURES_WEIGHTS === w);
for (const fam of ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"]) for (const w of hfWeights) check(`hf ${fam} ${w}`, () => hfFamily(fam, w));
const ggufDir = path.join(fixtures, "gguf");
for (const fam of fs.readdirSync(ggufDir).filter((f) => fs.statSync(path.join(ggufDir, f)).isDirectory())) {
  // Files left out of a size-limited bundle are reported, not failed.
  for (const type of ["F32", "F16", "Q8_0", "Q4_K_M"]) {
    if (fs.existsSync(path.join(ggufDir, fam, `model-${type}.gguf`))) check(`gguf ${fam} ${type}`, () => ggufFile(fam, type));
    else results[`gguf ${fam} ${type}`] = { skipped: "not in this fixtures folder" };
  }
}
report.failures = failures;
fs.writeFileSync(path.join(outDir, "cuda-fixtures.json"), JSON.stringify(report, null, 1));
console.log(`${failures} failure(s) of ${Object.keys(results).length}`);
process.exit(failures === 0 ? 0 : 1);

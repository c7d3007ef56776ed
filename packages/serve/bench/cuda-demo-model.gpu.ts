// GPU entry point (bundled by packages/backend-cuda/tools/gpu-bundle.sh): the demo model (models/demo) through
// @poot/runtime on the CUDA executor; first-step logits and greedy ids against transformers' reference files.

import * as fs from "node:fs";
import * as path from "node:path";
import { createEvalExecutor } from "@poot/backend-reference";
import { openSafetensors } from "@poot/models";
import { Engine, generateAll } from "@poot/runtime";
import { createCudaExecutor } from "@poot/backend-cuda";

interface DemoReference {
  prompt_ids: number[];
  greedy_ids: number[];
  greedy_text: string;
  chat_ids: number[];
  chat_greedy_ids: number[];
}
const DEMO = path.resolve("models/demo");
const outDir = process.env.OUT ?? ".gpu/out";
fs.mkdirSync(outDir, { recursive: true });
const report: Record<string, unknown> = { date: new Date().toISOString() };
let failures = 0;

function run(kind: "cuda" | "eval", tokens: number): Record<string, unknown> {
  const ref = JSON.parse(fs.readFileSync(path.join(DEMO, "reference.json"), "utf8")) as DemoReference;
  const prompt = openSafetensors(path.join(DEMO, "reference.safetensors")).readF32Sync("prompt_logits");
  const t0 = performance.now();
  const executor = kind === "cuda" ? createCudaExecutor({ cacheDir: "/tmp/poot-cuda-cache" }) : createEvalExecutor();
  const engine = Engine.load(DEMO, { executor, context: 64, prefillChunk: 8 });
  try {
    const s = engine.openSession();
    const V = engine.config.vocabSize,
      T = ref.prompt_ids.length;
    const first = s.step(ref.prompt_ids);
    const want = prompt.subarray((T - 1) * V, T * V);
    let d = 0,
      m = 0;
    for (let i = 0; i < V; i++) {
      d = Math.max(d, Math.abs(first[i]! - want[i]!));
      m = Math.max(m, Math.abs(want[i]!));
    }
    s.release();
    const loadMs = performance.now() - t0;
    const n = Math.min(tokens, ref.greedy_ids.length);
    const before = { ...engine.stats };
    const plain = generateAll(engine, engine.openSession(), ref.prompt_ids, {
      maxTokens: n,
      temperature: 0,
      ignoreEos: true,
    });
    const st = engine.stats;
    const decodeTokens = st.decodeTokens - before.decodeTokens,
      decodeMs = st.decodeMs - before.decodeMs;
    const idsEqual = plain.ids.every((x: number, i: number) => x === ref.greedy_ids[i]) && plain.ids.length === n;
    const logitsRel = d / m;
    const ok = logitsRel <= 1e-4 && idsEqual;
    if (!ok) failures++;
    return {
      kind,
      ok,
      logitsRelErr: logitsRel,
      idsEqual,
      ids: plain.ids,
      want: ref.greedy_ids.slice(0, n),
      text: plain.text,
      firstMs: loadMs,
      decodeTokens,
      decodeMs,
      decodeTokPerSec: (1000 * decodeTokens) / decodeMs,
      device: executor.caps.device,
    };
  } finally {
    engine.close();
  }
}

for (const [kind, tokens] of [
  ["cuda", 64],
  ["eval", 8],
] as const) {
  try {
    report[kind] = run(kind, tokens);
  } catch (e) {
    failures++;
    report[kind] = { error: (e as Error).stack };
  }
  console.log(kind, JSON.stringify(report[kind], null, 1));
}
report.failures = failures;
fs.writeFileSync(path.join(outDir, "gpu-model.json"), JSON.stringify(report, null, 1));
console.log(`${failures} failure(s)`);
process.exit(failures ? 1 : 0);

// GPU entry point: a model through the runtime on the CUDA executor against the eval executor (graph-ir's
// reference evaluation on the CPU): prompt logits (max |cuda - eval| / max |eval|) and greedy ids. Made for the
// random models of tools/random-model/make-hf.mjs (`--shape small` has rows that are multiples of 256, so the
// CUDA GEMVs take their 16-byte-load form).   node .gpu/cuda-vs-eval.gpu.mjs MODEL [TOKENS=16]
import * as fs from "node:fs";
import * as path from "node:path";
import { createCudaExecutor } from "@poot/backend-cuda";
import { type Executor } from "@poot/executor";
import { createEvalExecutor } from "@poot/backend-reference";
import { LoadedModel } from "@poot/models";
import { Engine, argmax } from "@poot/runtime";

const [model, tokensArg] = process.argv.slice(2);
if (model === undefined) throw new Error("usage: cuda-vs-eval.gpu.mjs MODEL [TOKENS]");
const G = Number(tokensArg ?? 16);
const prompt = [128000, 791, 4062, 14198, 39935, 35308, 927, 279, 16053, 5679, 13, 578, 4062, 14198, 39935, 35308];

function run(executor: Executor): { first: Float32Array; ids: number[] } {
  const engine = new Engine(LoadedModel.open(model!), {
    executor,
    context: prompt.length + G,
    tokenizer: null,
    prefillChunk: 16,
  });
  try {
    const s = engine.openSession();
    const first = s.step(prompt);
    const ids = [argmax(first)];
    for (let i = 1; i < G; i++) ids.push(argmax(s.step([ids[i - 1]!])));
    return { first: first.slice(), ids };
  } finally {
    engine.close();
    executor.dispose();
  }
}

const cuda = run(createCudaExecutor({ cacheDir: "/tmp/poot-cuda-cache" }));
const ref = run(createEvalExecutor());
let d = 0,
  m = 0;
for (let i = 0; i < ref.first.length; i++) {
  d = Math.max(d, Math.abs(cuda.first[i]! - ref.first[i]!));
  m = Math.max(m, Math.abs(ref.first[i]!));
}
const idsEqual = cuda.ids.every((x, i) => x === ref.ids[i]);
const report = {
  model,
  logitsRelErr: d / m,
  maxAbsLogit: m,
  idsEqual,
  cuda: cuda.ids,
  eval: ref.ids,
  ok: d / m <= 1e-3 && idsEqual,
};
const outDir = process.env.OUT ?? ".gpu/out";
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, `cuda-vs-eval-${path.basename(model)}.json`), JSON.stringify(report, null, 1));
console.log(JSON.stringify(report));
process.exit(report.ok ? 0 : 1);

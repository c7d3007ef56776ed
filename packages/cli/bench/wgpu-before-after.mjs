// WebGPU before/after an executor change, in one run: every fixtures/hf family and every fixtures/gguf file through
// the runtime's Engine on two sync WebGPU executors (the built package and a saved copy of its earlier dist),
// max |Δlogit| between them (the oracle tests are gpu-fixtures-wgpu.test.ts); then decode tok/s alternated.
// usage: node packages/cli/bench/wgpu-before-after.mjs BEFORE_DIST (a copy of packages/backend-wgpu/dist from before);
// ONLY_TPS=1 skips the logits, ROUNDS=N sets the decode rounds (default 3). Needs `pnpm build`.
import * as fs from "node:fs";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { LoadedModel } from "@poot/models";
import { Engine } from "@poot/runtime";
import { createSyncWgpuExecutor } from "@poot/backend-wgpu/node";
import { fixture } from "@poot/testkit";

const before = path.resolve(process.argv[2]);
const old = await import(pathToFileURL(path.join(before, "node.js")).href);
const make = {
  before: () => old.createSyncWgpuExecutor({ workerUrl: pathToFileURL(path.join(before, "sync-worker.js")) }),
  after: () => createSyncWgpuExecutor({}),
};

/** Models: [label, path, weights option, prompt ids]. */
const models = [];
for (const fam of ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"]) {
  const dir = path.join(fixture("hf"), fam);
  models.push([
    `hf/${fam}`,
    dir,
    "f32",
    JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")).prompt_ids,
  ]);
}
const gg = fixture("gguf");
for (const d of fs.readdirSync(gg).sort()) {
  if (!fs.statSync(path.join(gg, d)).isDirectory()) continue;
  for (const f of fs.readdirSync(path.join(gg, d)).sort()) {
    if (!f.endsWith(".gguf")) continue;
    const ref = f.startsWith("model-")
      ? path.join(gg, d, f.replace("model-", "reference-").replace(".gguf", ".json"))
      : path.join(gg, d, f.replace(".gguf", ".json"));
    const ids = fs.existsSync(ref) ? JSON.parse(fs.readFileSync(ref, "utf8")).prompt_ids : undefined;
    models.push([`gguf/${d}/${f}`, path.join(gg, d, f), undefined, ids ?? [1, 2, 3, 4, 5, 6, 7, 8]]);
  }
}

/** Prefill logits, then 6 teacher-forced decode steps (the prompt's tokens again). */
function logits(which, p, weights, ids) {
  const executor = make[which]();
  const engine = new Engine(LoadedModel.open(p, weights ? { weights } : {}), {
    executor,
    context: 64,
    tokenizer: null,
  });
  try {
    const out = [];
    const s = engine.openSession();
    out.push(Float32Array.from(s.step(ids.slice(0, 12))));
    for (let t = 0; t < 6; t++) out.push(Float32Array.from(s.step([ids[t % ids.length]])));
    s.release();
    return out;
  } finally {
    engine.dispose?.();
    executor.dispose();
  }
}

let worst = 0;
for (const [label, p, weights, ids] of process.env.ONLY_TPS ? [] : models) {
  const a = logits("before", p, weights, ids),
    b = logits("after", p, weights, ids);
  let d = 0,
    m = 0;
  for (let r = 0; r < a.length; r++)
    for (let i = 0; i < a[r].length; i++) {
      d = Math.max(d, Math.abs(a[r][i] - b[r][i]));
      m = Math.max(m, Math.abs(a[r][i]));
    }
  worst = Math.max(worst, d);
  console.log(JSON.stringify({ model: label, maxAbsDeltaLogit: d, maxAbsLogit: m }));
}
console.log(JSON.stringify({ worstMaxAbsDeltaLogit: worst }));

/** Decode tok/s on the hf llama3 fixture: 48 single-token steps after a 4-token prefill. */
function tps(which) {
  const executor = make[which]();
  const dir = path.join(fixture("hf"), "llama3");
  const engine = new Engine(LoadedModel.open(dir, { weights: "f32" }), { executor, context: 64, tokenizer: null });
  try {
    const s = engine.openSession();
    s.step([1, 2, 3, 4]);
    for (let i = 0; i < 4; i++) s.step([5]);
    const d0 = executor.dispatchesSubmitted?.() ?? 0;
    const t0 = performance.now();
    for (let i = 0; i < 48; i++) s.step([(i * 7) % 100]);
    const ms = performance.now() - t0;
    const per = ((executor.dispatchesSubmitted?.() ?? 0) - d0) / 48;
    s.release();
    return { tps: (48 / ms) * 1000, dispatchesPerToken: per };
  } finally {
    executor.dispose();
  }
}
for (let round = 0; round < Number(process.env.ROUNDS ?? 3); round++)
  for (const which of round % 2 === 0 ? ["before", "after"] : ["after", "before"])
    console.log(JSON.stringify({ round, which, ...tps(which) }));

// The CPU step profile of one prefill: which phases (kernels) a prompt's steps spend their time in, on the built
// backend-cpu, runtime and models (decision 2305). Runs one warm-up prefill, then times one, and prints the prefill's
// tok/s and tok per CPU-second, then the phases grouped by label (layer suffixes folded), largest first.
//
// usage: node bench/cpu-prefill-profile.mjs MODEL.gguf [--prompt-tokens 128] [--prefill-chunk 64] [--threads 2]
//          [--no-native] [--raw] [--numerics exact|fast]
// (--no-native: Wasm kernels only, as POOT_CPU_NATIVE=0; --raw: one row per label, layers not folded; --numerics: the
// CPU numerics, decision 2320)
import { parseArgs } from "node:util";
import { createCpuExecutor } from "@poot/backend-cpu";
import { LoadedModel } from "@poot/models";
import { Engine } from "@poot/runtime";
import { cpuMs, phaseRows, randomPrompt } from "./cpu-profile.mjs";

const { values: o, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    "prompt-tokens": { type: "string", default: "128" },
    "prefill-chunk": { type: "string", default: "64" },
    threads: { type: "string", default: "2" },
    "no-native": { type: "boolean", default: false },
    raw: { type: "boolean", default: false },
    numerics: { type: "string", default: "exact" },
  },
});
const file = positionals[0];
const P = Number(o["prompt-tokens"]),
  chunk = Number(o["prefill-chunk"]),
  threads = Number(o.threads);
if (file === undefined || ![P, chunk, threads].every((n) => Number.isInteger(n) && n >= 1)) {
  console.error(
    "usage: node bench/cpu-prefill-profile.mjs MODEL.gguf [--prompt-tokens N] [--prefill-chunk N] [--threads N] [--no-native] [--raw]",
  );
  process.exit(2);
}
const executor = createCpuExecutor({ threads, profile: true, native: !o["no-native"], numerics: o.numerics });
const engine = new Engine(LoadedModel.open(file, { weights: "f32" }), {
  executor,
  context: P + 1,
  tokenizer: null,
  prefillChunk: chunk,
  maxSequences: 1,
});
const prompt = randomPrompt(engine, P);
for (let run = 0; run < 2; run++) {
  const s = engine.openSession();
  executor.takeProfile();
  const c0 = cpuMs(),
    t0 = performance.now();
  s.step(prompt);
  const t1 = performance.now(),
    c1 = cpuMs();
  const profile = executor.takeProfile() ?? [];
  s.release();
  if (run === 0) continue; // warm-up: stages the programs, binds the weights
  console.log(
    `prefill ${P} tokens (chunks of ${chunk}, ${threads} threads, ${o["no-native"] ? "Wasm only" : "native GEMVs + Wasm"}): ` +
      `${(t1 - t0).toFixed(0)} ms = ${((P / (t1 - t0)) * 1000).toFixed(2)} tok/s, ${((P / (c1 - c0)) * 1000).toFixed(2)} tok per CPU-second`,
  );
  const { rows, total } = phaseRows(profile, o.raw);
  for (const [key, r] of rows)
    console.log(
      `${r.wall.toFixed(1).padStart(9)} ms ${((100 * r.wall) / total).toFixed(1).padStart(5)} %  x${r.n}  ${key}`,
    );
}
await executor.dispose?.();
process.exit(0);

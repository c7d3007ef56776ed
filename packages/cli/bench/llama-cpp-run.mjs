// One llama.cpp measurement for cpu-vs-llama-cpp.mjs, in its own process (as `poot bench` runs in its own): loads a
// GGUF with node-llama-cpp's prebuilt CPU build, then times a warm-up and one run of the same shape as `poot bench`:
// the prompt (P seeded random ids, the same ids `poot bench` draws) as one batch up to the first token, then G - 1
// greedy single-token steps, each id fed back. Prints one JSON line: the rates and the build it loaded.
//
// usage: node bench/llama-cpp-run.mjs MODEL.gguf PROMPT_TOKENS GEN_TOKENS THREADS
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Rng } from "@poot/runtime";
import { LlamaLogLevel, getLlama } from "node-llama-cpp";

const [model, p, g, t] = process.argv.slice(2);
const P = Number(p),
  G = Number(g),
  threads = Number(t);
if (model === undefined || !(P >= 1 && G >= 2 && threads >= 1)) {
  console.error("usage: node bench/llama-cpp-run.mjs MODEL.gguf PROMPT_TOKENS GEN_TOKENS THREADS");
  process.exit(2);
}

const t0 = performance.now();
const llama = await getLlama({
  gpu: false,
  build: "never",
  maxThreads: threads,
  logLevel: LlamaLogLevel.error,
  progressLogs: false,
});
const m = await llama.loadModel({ modelPath: model, gpuLayers: 0 });
const context = await m.createContext({
  contextSize: P + G,
  batchSize: P,
  threads: { ideal: threads, min: threads },
  sequences: 1,
});

// `poot bench`'s prompt: Rng(1), one id per position, uniform over the vocabulary.
const rng = new Rng(1);
const vocab = m.fileInfo.metadata.tokenizer.ggml.tokens.length;
const prompt = Array.from({ length: P }, () => Math.floor(rng.next() * vocab));

/** CPU milliseconds of this process, every thread (llama.cpp's workers included). */
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** One run on a fresh sequence: prefill tok/s (prompt to the first token) and decode tok/s (the G - 1 steps after). */
async function run() {
  const seq = context.getSequence();
  try {
    // temperature 0: greedy, as `poot bench` takes the argmax.
    const gen = seq.evaluate(prompt, { temperature: 0 });
    const w0 = performance.now(),
      c0 = cpuMs();
    await gen.next();
    const w1 = performance.now(),
      c1 = cpuMs();
    for (let k = 1; k < G; k++) await gen.next();
    const w2 = performance.now(),
      c2 = cpuMs();
    await gen.return();
    return {
      prefillTokS: (P / (w1 - w0)) * 1000,
      decodeTokS: ((G - 1) / (w2 - w1)) * 1000,
      prefillTokPerCpuS: (P / (c1 - c0)) * 1000,
      decodeTokPerCpuS: ((G - 1) / (c2 - c1)) * 1000,
    };
  } finally {
    seq.dispose();
  }
}

const t1 = performance.now();
const warm = await run(); // warm-up, as `poot bench` does one
const t2 = performance.now();
const r = await run();
process.stderr.write(
  `llama.cpp: load ${((t1 - t0) / 1000).toFixed(1)} s, warm-up ${((t2 - t1) / 1000).toFixed(1)} s (${warm.decodeTokS.toFixed(2)} tok/s decode)\n`,
);

// Which of the per-CPU ggml libraries the loader picked (ggml_backend_load_all scores them by CPU features).
const maps = readFileSync("/proc/self/maps", "utf8");
const cpuLib = /libggml-cpu-[\w-]+\.so/.exec(maps)?.[0] ?? "unknown";
// node-llama-cpp's exports hide its package.json; the folder its entry point resolves to holds it.
const nlcEntry = fileURLToPath(import.meta.resolve("node-llama-cpp"));
const nlcVersion = JSON.parse(
  readFileSync(join(nlcEntry.slice(0, nlcEntry.lastIndexOf("/dist/")), "package.json"), "utf8"),
).version;
console.log(
  JSON.stringify({
    ...r,
    build: {
      nodeLlamaCpp: nlcVersion,
      llamaCpp: `${llama.llamaCppRelease.repo} ${llama.llamaCppRelease.release}`,
      buildType: llama.buildType,
      gpu: llama.gpu,
      cpuLibrary: cpuLib,
      systemInfo: llama.systemInfo.trim(),
    },
    context: {
      size: context.contextSize,
      batchSize: context.batchSize,
      flashAttention: context.flashAttention,
      threads,
    },
  }),
);
await context.dispose();
await m.dispose();
await llama.dispose();

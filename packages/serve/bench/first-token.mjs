// Time to the first token of a fresh start, without and with the lowering cache, in one process (same machine load):
// a first start fills the cache and warms what is not ours to measure (the driver's own shader caches, the OS page
// cache of the weights); then one start lowers everything (cache off: graph-plan, kernelgen and codegen for every
// staged program) and one reads every program from the cache. Each start makes a new executor and Engine, stages the
// prompt's chunk programs and the decode program as `poot run` does, and steps the prompt.
// usage: node packages/serve/bench/first-token.mjs MODEL [BACKEND=vulkan|cuda|cpu] [PROMPT_TOKENS=8]   (after `pnpm build`)
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createCpuExecutor } from "@poot/backend-cpu";
import { createCudaExecutor } from "@poot/backend-cuda";
import { createVulkanExecutor } from "@poot/backend-vulkan";
import { LoweringCache } from "@poot/executor/lowering";
import { LoadedModel } from "@poot/models";
import { Engine } from "@poot/runtime";

const [model, backend = "vulkan", promptArg = "8"] = process.argv.slice(2);
if (model === undefined) throw new Error("usage: first-token.mjs MODEL [BACKEND] [PROMPT_TOKENS]");
const P = Number(promptArg);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "poot-first-token-"));
const make = (cache) => {
  const c = cache === undefined ? {} : { cache };
  if (backend === "cpu") return createCpuExecutor(c);
  return backend === "cuda"
    ? createCudaExecutor({ ...c, cacheDir: path.join(dir, "cubins") })
    : createVulkanExecutor(c);
};

function start(label, useCache) {
  const cache = useCache ? new LoweringCache({ dir: path.join(dir, "lowered") }) : undefined;
  const t0 = performance.now();
  const executor = make(cache);
  const engine = new Engine(LoadedModel.open(model), { executor, context: P + 8, tokenizer: null });
  try {
    const ids = Array.from({ length: P }, (_, i) => (i * 7919) % engine.config.vocabSize);
    for (const c of new Set([...engine.chunks(P), 1])) engine.decodeProgram(c);
    const staged = performance.now() - t0;
    engine.openSession().step(ids);
    const first = performance.now() - t0;
    console.log(
      JSON.stringify({
        label,
        backend,
        stagedMs: Math.round(staged),
        firstTokenMs: Math.round(first),
        cache: cache?.stats() ?? "off",
      }),
    );
    return first;
  } finally {
    engine.close();
    executor.dispose();
  }
}

start("warm-up (fills the cache)", true);
const cold = start("no lowering cache", false);
const warm = start("lowering cache hits", true);
console.log(
  JSON.stringify({
    model,
    backend,
    coldMs: Math.round(cold),
    warmMs: Math.round(warm),
    ratio: Number((cold / warm).toFixed(2)),
  }),
);
fs.rmSync(dir, { recursive: true, force: true });

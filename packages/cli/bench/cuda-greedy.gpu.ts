// GPU entry point: the device greedy loop (decision 2201) against one host step a token on the same model, two CUDA
// executors (one engine each): the ids equal for every launch size, a stop inside a launch leaves the session exactly
// as the step-by-step one (tokens, pages, and the next step's logits bit for bit), and no launch runs without
// being counted. The ids of the steps path are the host argmax of the logits CUDA computed, so this checks the
// device argmax and the device-side inputs of every step against them.
// usage: node .gpu/cuda-greedy.gpu.mjs MODEL [count]   (e.g. /tmp/l1b from make-hf.mjs)   -> stdout, $OUT/cuda-greedy.json
import * as fs from "node:fs";
import * as path from "node:path";
import { createCudaExecutor } from "@poot/backend-cuda";
import { LoadedModel } from "@poot/models";
import { Engine, Rng, greedyArgmax, type EngineOptions } from "@poot/runtime";

const [model, countArg] = process.argv.slice(2);
if (model === undefined) throw new Error("usage: cuda-greedy.gpu.mjs MODEL [count]");
const count = Number(countArg ?? 100);
const outDir = process.env.OUT ?? ".gpu/out";
fs.mkdirSync(outDir, { recursive: true });

function engine(o: Partial<EngineOptions>): Engine {
  const executor = createCudaExecutor({ cacheDir: "/tmp/poot-cuda-cache" });
  return new Engine(LoadedModel.open(model!), {
    executor,
    context: 16 + count + 64,
    tokenizer: null,
    maxSequences: 1,
    ...o,
  });
}

const rng = new Rng(7);
const results: Record<string, unknown>[] = [];
const steps = engine({ greedyLoop: "steps" });
const V = steps.config.vocabSize;
const prompt = Array.from({ length: 16 }, () => Math.floor(rng.next() * V));
const ref = (() => {
  const s = steps.openSession();
  const first = greedyArgmax(s.step(prompt));
  const ids = steps.greedy(s, first, count);
  s.release();
  return { first, ids };
})();
let failures = 0;
for (const K of [1, 3, 8]) {
  const e = engine({ greedyTokensPerLaunch: K });
  try {
    const s = e.openSession();
    const first = greedyArgmax(s.step(prompt));
    const t0 = performance.now();
    const ids = e.greedy(s, first, count);
    const ms = performance.now() - t0;
    const equal = first === ref.first && ids.length === ref.ids.length && ids.every((x, i) => x === ref.ids[i]);
    const firstDiff = ids.findIndex((x, i) => x !== ref.ids[i]);
    s.release();
    // A stop at index 41 (inside a launch for K 3 and 8): the session equals the step-by-step one after 41 ids.
    const a = steps.openSession(),
      b = e.openSession();
    const fa = greedyArgmax(a.step(prompt)),
      fb = greedyArgmax(b.step(prompt));
    const stop = (_: number, i: number) => i === 41;
    const ia = steps.greedy(a, fa, count, { stop }),
      ib = e.greedy(b, fb, count, { stop });
    const next = ib[ib.length - 1]!;
    const la = a.step([next]),
      lb = b.step([next]);
    const rollback =
      ia.length === 42 &&
      ib.length === 42 &&
      ia.every((x, i) => x === ib[i]) &&
      a.tokens.length === b.tokens.length &&
      a.tokens.every((x, i) => x === b.tokens[i]) &&
      a.pages.length === b.pages.length &&
      Buffer.from(la.buffer).equals(Buffer.from(lb.buffer));
    a.release();
    b.release();
    const r = {
      tokensPerLaunch: K,
      count,
      idsEqual: equal,
      firstDiff,
      rollbackExact: rollback,
      launches: e.stats.greedyLaunches,
      rolledBack: e.stats.greedyRolledBack,
      tokS: (count / ms) * 1000,
    };
    if (!equal || !rollback || e.stats.greedyLaunches === 0) failures++;
    console.log(JSON.stringify(r));
    results.push(r);
  } catch (err) {
    failures++;
    const r = { tokensPerLaunch: K, error: (err as Error).stack?.slice(0, 800) };
    console.log(JSON.stringify(r));
    results.push(r);
  } finally {
    e.close();
    e.executor.dispose();
  }
}
steps.close();
steps.executor.dispose();
fs.writeFileSync(path.join(outDir, "cuda-greedy.json"), `${JSON.stringify({ model, results }, null, 1)}\n`);
console.log(failures === 0 ? "greedy loop: all equal" : `greedy loop: ${failures} FAILED`);
process.exit(failures === 0 ? 0 : 1);

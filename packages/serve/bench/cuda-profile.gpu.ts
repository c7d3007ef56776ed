// GPU entry point: where a decode step's time goes on the CUDA executor. Loads MODEL (its own dtypes), prefills a seeded
// random prompt, decodes a few tokens (the runtime captures the step as a CUDA graph), then profiles one decode
// step and one prefill chunk kernel by kernel (events around each launch) and times the bare graph replay.
//   node .gpu/cuda-profile.gpu.mjs MODEL [PROMPT=16] [GEN=128]   -> stdout and $OUT/cuda-profile.json
import * as fs from "node:fs";
import * as path from "node:path";
import { CudaProgram, createCudaExecutor, type KernelTiming } from "@poot/backend-cuda";
import { LoadedModel } from "@poot/models";
import { Engine, Rng, argmax } from "@poot/runtime";

const [model, promptArg, genArg] = process.argv.slice(2);
if (model === undefined) throw new Error("usage: cuda-profile.gpu.mjs MODEL [PROMPT] [GEN]");
const P = Number(promptArg ?? 16), G = Number(genArg ?? 128);
const outDir = process.env.OUT ?? ".gpu/out";
fs.mkdirSync(outDir, { recursive: true });

/** Launch timings summed by kernel family (the entry point without its program/plan prefix). */
function summarize(t: readonly KernelTiming[]): { total: number; launches: number; byKernel: { kernel: string; count: number; us: number }[]; slowest: KernelTiming[] } {
  const by = new Map<string, { kernel: string; count: number; us: number }>();
  for (const k of t) {
    const fam = `${k.op}:${k.kernel.replace(/^.*?_p\d+_/, "")}`;
    const e = by.get(fam) ?? { kernel: fam, count: 0, us: 0 };
    e.count++;
    e.us += k.us;
    by.set(fam, e);
  }
  return { total: t.reduce((a, k) => a + k.us, 0), launches: t.length, byKernel: [...by.values()].sort((a, b) => b.us - a.us), slowest: [...t].sort((a, b) => b.us - a.us).slice(0, 12) };
}

const executor = createCudaExecutor({ cacheDir: "/tmp/poot-cuda-cache" });
const t0 = performance.now();
const engine = new Engine(LoadedModel.open(model), { executor, context: P + G, tokenizer: null, prefillChunk: 64 });
const rng = new Rng(1);
const prompt = Array.from({ length: P }, () => Math.floor(rng.next() * engine.config.vocabSize));
const s = engine.openSession();
let logits = s.step(prompt);
const firstMs = performance.now() - t0;
for (let i = 0; i < 8; i++) logits = s.step([argmax(logits)]);
const prog = engine.decodeProgram(1);
if (!(prog instanceof CudaProgram)) throw new Error("not a CUDA program");
// The slots hold the last step's ids, position and page table: the profile and the replays repeat that step
// against the engine's shared StateSet (the paged KV pool, decision 0603).
const decode = summarize(prog.profile(engine.state()));
// The bare replay (no logits download) and the runtime's step (replay + logits download + argmax).
prog.capture(engine.state());
const reps = 50;
let w = performance.now();
for (let i = 0; i < reps; i++) prog.replay();
const replayMs = (performance.now() - w) / reps;
w = performance.now();
for (let i = 0; i < reps; i++) {
  prog.replay();
  prog.readOutput("logits");
}
const replayReadMs = (performance.now() - w) / reps;
const chunk = engine.decodeProgram(64);
if (!(chunk instanceof CudaProgram)) throw new Error("not a CUDA program");
const st = chunk.createState();
chunk.writeSlot("ids", Array.from({ length: 64 }, (_, i) => prompt[i % P]!));
chunk.writeSlot("pos", [0]);
chunk.run(st);
const prefill = summarize(chunk.profile(st));
st.dispose();
s.release();
const report = { date: new Date().toISOString(), model, device: executor.caps.device, firstStepMs: firstMs, decodeDispatches: prog.dispatchesPerStep(), replayMs, replayReadMs, deviceBytes: executor.deviceBytes(), decode, prefill64: prefill };
fs.writeFileSync(path.join(outDir, "cuda-profile.json"), JSON.stringify(report, null, 1));
console.log(JSON.stringify({ ...report, decode: { ...decode, slowest: decode.slowest.slice(0, 6) }, prefill64: { ...prefill, slowest: prefill.slowest.slice(0, 4) } }, null, 1));
engine.close();
executor.dispose();

// GPU entry point: where a decode step's time goes on the CUDA executor. Loads MODEL (its own dtypes), prefills a seeded
// random prompt, decodes a few tokens (the runtime captures the step as a CUDA graph), then profiles one decode
// step and one prefill chunk kernel by kernel (events around each launch) and times the bare graph replay.
//   node .gpu/cuda-profile.gpu.mjs MODEL [PROMPT=16] [GEN=128]   -> stdout and $OUT/cuda-profile.json
import * as fs from "node:fs";
import * as path from "node:path";
import { createCudaExecutor } from "@poot/backend-cuda";
import { DeviceProgram, type KernelTiming } from "@poot/executor";
import { LoadedModel } from "@poot/models";
import { Engine, Rng, argmax } from "@poot/runtime";

const [model, promptArg, genArg] = process.argv.slice(2);
if (model === undefined) throw new Error("usage: cuda-profile.gpu.mjs MODEL [PROMPT] [GEN]");
const P = Number(promptArg ?? 16),
  G = Number(genArg ?? 128);
const outDir = process.env.OUT ?? ".gpu/out";
fs.mkdirSync(outDir, { recursive: true });

/** One launch with the bytes its plan's tensors span (inputs as the kernel sees them, plus the output) and GB/s. */
interface Row {
  readonly op: string;
  readonly kind: string;
  readonly eqn: number;
  readonly grid: string;
  readonly shapes: string;
  readonly bytes: number;
  readonly us: number;
  readonly GBps: number;
}

/** Each timing with the bytes its launch binds and GB/s (shapes and kinds stay in the lowered program). */
function rows(t: readonly KernelTiming[] | null): Row[] {
  return (t ?? []).map((k) => ({
    op: k.op,
    kind: k.op,
    eqn: k.eqn,
    grid: k.grid.join("x"),
    shapes: k.kernel.replace(/^.*?_p\d+_/, ""),
    bytes: k.bytes,
    us: k.us,
    GBps: k.bytes / (k.us * 1e3),
  }));
}

/** Rows grouped by kind and shapes (one line per distinct kernel of a layer), largest total first. */
function table(r: readonly Row[]): {
  kind: string;
  shapes: string;
  grid: string;
  count: number;
  usEach: number;
  usTotal: number;
  MB: number;
  GBps: number;
}[] {
  const by = new Map<string, Row[]>();
  for (const x of r) {
    const key = `${x.kind}|${x.op}|${x.shapes}|${x.grid}`;
    by.set(key, [...(by.get(key) ?? []), x]);
  }
  return [...by.values()]
    .map((xs) => {
      const us = xs.map((x) => x.us).sort((a, b) => a - b);
      const usEach = us[us.length >> 1]!;
      const x = xs[0]!;
      return {
        kind: `${x.kind}/${x.op}`,
        shapes: x.shapes,
        grid: x.grid,
        count: xs.length,
        usEach,
        usTotal: us.reduce((a, b) => a + b, 0),
        MB: x.bytes / 1e6,
        GBps: x.bytes / (usEach * 1e3),
      };
    })
    .sort((a, b) => b.usTotal - a.usTotal);
}

/** Launch timings summed by kernel family (the entry point without its program/plan prefix). */
function summarize(t0: readonly KernelTiming[] | null): {
  total: number;
  launches: number;
  byKernel: { kernel: string; count: number; us: number }[];
  slowest: KernelTiming[];
} {
  const t = t0 ?? [];
  const by = new Map<string, { kernel: string; count: number; us: number }>();
  for (const k of t) {
    const fam = `${k.op}:${k.kernel.replace(/^.*?_p\d+_/, "")}`;
    const e = by.get(fam) ?? { kernel: fam, count: 0, us: 0 };
    e.count++;
    e.us += k.us;
    by.set(fam, e);
  }
  return {
    total: t.reduce((a, k) => a + k.us, 0),
    launches: t.length,
    byKernel: [...by.values()].sort((a, b) => b.us - a.us),
    slowest: [...t].sort((a, b) => b.us - a.us).slice(0, 12),
  };
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
if (!(prog instanceof DeviceProgram)) throw new Error("not a CUDA program");
// The slots hold the last step's ids, position and page table: the profile and the replays repeat that step
// against the engine's shared StateSet (the paged KV pool, decision 0603).
const decodeTimings = prog.profile(engine.state());
const decode = summarize(decodeTimings);
// A second profile: the first launch of each kernel after capture may include module/JIT warm-up.
const decodeRows = rows(prog.profile(engine.state()));
const decodeTable = table(decodeRows);
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
const profiledUs = decodeRows.reduce((a, x) => a + x.us, 0),
  profiledBytes = decodeRows.reduce((a, x) => a + x.bytes, 0);
console.log(
  `decode step: ${decodeRows.length} launches, ${profiledUs.toFixed(0)} us profiled (events between launches), ${(profiledBytes / 1e6).toFixed(0)} MB; replay ${(1000 * replayMs).toFixed(0)} us, replay + logits read ${(1000 * replayReadMs).toFixed(0)} us`,
);
for (const x of decodeTable)
  console.log(
    `${x.usTotal.toFixed(1).padStart(8)} us ${String(x.count).padStart(3)}x ${x.usEach.toFixed(2).padStart(7)} us ${x.MB.toFixed(2).padStart(8)} MB ${x.GBps.toFixed(0).padStart(5)} GB/s  grid ${x.grid}  ${x.kind}  ${x.shapes}`,
  );
fs.writeFileSync(
  path.join(outDir, "cuda-profile-decode.json"),
  JSON.stringify({ replayMs, replayReadMs, profiledUs, profiledBytes, decodeTable, decodeRows }, null, 1),
);
const chunk = engine.decodeProgram(64);
if (!(chunk instanceof DeviceProgram)) throw new Error("not a CUDA program");
const st = chunk.createState();
chunk.writeSlot(
  "ids",
  Array.from({ length: 64 }, (_, i) => prompt[i % P]!),
);
chunk.writeSlot("pos", [0]);
// A fresh StateSet: the chunk's tokens go to pages 0, 1, ... in order (as the runtime's first session would).
const slotSize = (key: string): number => chunk.schema.slots.get(key)?.size ?? 0;
if (slotSize("page_table") > 0)
  chunk.writeSlot(
    "page_table",
    Array.from({ length: slotSize("page_table") }, (_, i) => i),
  );
if (slotSize("slot_map") > 0)
  chunk.writeSlot(
    "slot_map",
    Array.from({ length: slotSize("slot_map") }, (_, i) => i),
  );
if (slotSize("state_lane") > 0)
  chunk.writeSlot(
    "state_lane",
    Array.from({ length: slotSize("state_lane") }, () => 0),
  );
chunk.run(st);
const prefill = summarize(chunk.profile(st));
st.dispose();
s.release();
const report = {
  date: new Date().toISOString(),
  model,
  device: executor.caps.device,
  firstStepMs: firstMs,
  decodeDispatches: prog.dispatchesPerStep(),
  replayMs,
  replayReadMs,
  profiledUs,
  profiledBytes,
  deviceBytes: executor.deviceBytes(),
  decodeTable,
  decodeRows,
  decode,
  prefill64: prefill,
};
fs.writeFileSync(path.join(outDir, "cuda-profile.json"), JSON.stringify(report, null, 1));
console.log(
  JSON.stringify(
    {
      ...report,
      decodeRows: undefined,
      decodeTable: undefined,
      decode: { ...decode, slowest: decode.slowest.slice(0, 6) },
      prefill64: { ...prefill, slowest: prefill.slowest.slice(0, 4) },
    },
    null,
    1,
  ),
);
engine.close();
executor.dispose();

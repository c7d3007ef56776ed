// The CPU step profile of decode: which phases (kernels) the greedy steps after a prompt spend their time in, on the
// built backend-cpu, runtime and models (issue #23, decision 2370). Prefills the prompt, then times `--gen-tokens` greedy steps once
// warm (a first session stages the programs and binds the weights), and prints decode tok/s and tok per CPU-second,
// then the phases grouped by label (layer suffixes folded), largest first, with each GEMV phase's weight-read GB/s
// when its label names the weight shape (native launches).
//
// usage: node bench/cpu-decode-profile.mjs MODEL.gguf [--prompt-tokens 128] [--gen-tokens 32] [--threads 2]
//          [--numerics exact|fast] [--raw] [--order]
// (--raw: one row per label, layers not folded; --order: the first 40 phases in schedule order first; "xN": rows of
// the schedule with that label, i.e. per token)
import { parseArgs } from "node:util";
import { createCpuExecutor } from "@poot/backend-cpu";
import { LoadedModel } from "@poot/models";
import { Engine, greedyArgmax } from "@poot/runtime";
import { cpuMs, phaseRows, randomPrompt } from "./cpu-profile.mjs";

const { values: o, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    "prompt-tokens": { type: "string", default: "128" },
    "gen-tokens": { type: "string", default: "32" },
    threads: { type: "string", default: "2" },
    numerics: { type: "string", default: "exact" },
    raw: { type: "boolean", default: false },
    order: { type: "boolean", default: false },
  },
});
const file = positionals[0];
const P = Number(o["prompt-tokens"]),
  G = Number(o["gen-tokens"]),
  threads = Number(o.threads);
if (
  file === undefined ||
  ![P, G, threads].every((n) => Number.isInteger(n) && n >= 1) ||
  (o.numerics !== "exact" && o.numerics !== "fast")
) {
  console.error(
    "usage: node bench/cpu-decode-profile.mjs MODEL.gguf [--prompt-tokens N] [--gen-tokens N] [--threads N] [--numerics exact|fast] [--raw] [--order]",
  );
  process.exit(2);
}
const executor = createCpuExecutor({ threads, profile: true, numerics: o.numerics });
// Labels that name each native GEMV's kernel and shape (the device's say only `op/request native grid`), and the
// schedules submitted per step: the profile's rows are the phases of one schedule.
const device = executor.device;
const record = device.record.bind(device);
const nativeLabel = (l) => {
  const u = l.launch.uniformBits;
  return `${l.launch.kernel.code.entryPoint} M=${u[0]} N=${u[1]} K=${u[2]}`;
};
device.record = (ops) => {
  const s = record(ops);
  // One phase per launch and per copied region, in order (the device's record).
  const natives = ops.flatMap((op) =>
    op.kind === "launch"
      ? [op.launch.kernel.native ? nativeLabel(op) : null]
      : op.kind === "copy"
        ? op.regions.map(() => null)
        : [],
  );
  return { ...s, labels: s.labels.map((l, i) => natives[i] ?? l) };
};
const engine = new Engine(LoadedModel.open(file, { weights: "f32" }), {
  executor,
  context: P + G + 1,
  tokenizer: null,
  maxSequences: 1,
});
const prompt = randomPrompt(engine, P);
for (let run = 0; run < 2; run++) {
  const s = engine.openSession();
  const logits = s.step(prompt);
  executor.takeProfile();
  const d0 = executor.stats().dispatches,
    s0 = executor.stats().steps;
  const c0 = cpuMs(),
    t0 = performance.now();
  engine.greedy(s, greedyArgmax(logits), G);
  const t1 = performance.now(),
    c1 = cpuMs();
  const dispatches = (executor.stats().dispatches - d0) / G,
    schedules = (executor.stats().steps - s0) / G;
  const profile = executor.takeProfile() ?? [];
  s.release();
  if (run === 0) continue; // warm-up
  console.log(
    `decode ${G} tokens after ${P} (${threads} threads, numerics ${o.numerics}): ${(t1 - t0).toFixed(0)} ms = ` +
      `${((G / (t1 - t0)) * 1000).toFixed(2)} tok/s, ${((G / (c1 - c0)) * 1000).toFixed(2)} tok per CPU-second, ` +
      `${dispatches.toFixed(0)} dispatches and ${schedules.toFixed(2)} schedules per token`,
  );
  const { rows, total, busy } = phaseRows(profile, o.raw);
  console.log(
    `phases: ${(total / G).toFixed(2)} ms/token wall (of ${((t1 - t0) / G).toFixed(2)}), ${(busy / G).toFixed(2)} ms/token busy over ${threads} threads`,
  );
  if (o.order)
    profile.slice(0, 40).forEach((p, i) => console.log(`  #${i} ${(p.wall / G).toFixed(3)} ms/tok  ${p.label}`));
  for (const [key, r] of rows)
    console.log(
      `${(r.wall / G).toFixed(3).padStart(8)} ms/tok ${((100 * r.wall) / total).toFixed(1).padStart(5)} %  busy ${(r.busy / G).toFixed(3).padStart(7)}  x${r.n}  ${key}`,
    );
}
await executor.dispose?.();
process.exit(0);

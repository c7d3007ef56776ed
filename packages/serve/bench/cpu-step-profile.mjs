// Profile of CPU decode steps: per phase kind, wall time, each thread's busy and wait time, and the time a step spends
// outside its region (runtime, sampling, slot writes). Usage: node bench/cpu-step-profile.mjs MODEL.gguf [threads] [steps] [claims] [prompt]
import os from "node:os";
import { createCpuExecutor } from "@poot/backend-cpu";
import { LoadedModel } from "@poot/models";
import { Engine, argmax } from "@poot/runtime";

const [model, threadsArg = "2", stepsArg = "32", claimsArg, promptArg = "16"] = process.argv.slice(2);
if (model === undefined) {
  console.error(
    "usage: node bench/cpu-step-profile.mjs MODEL.gguf [threads] [steps] [claims per thread] [prompt tokens]",
  );
  process.exit(1);
}
const threads = Number(threadsArg),
  steps = Number(stepsArg),
  prompt = Number(promptArg);
const executor = createCpuExecutor({
  threads,
  profile: true,
  ...(claimsArg !== undefined && claimsArg !== "-" ? { claimsPerThread: Number(claimsArg) } : {}),
  compile: { horizontalFusion: "shared-epilogue" },
});
const engine = new Engine(LoadedModel.open(model, {}), {
  executor,
  context: prompt + steps + 8,
  tokenizer: null,
  prefillChunk: 64,
  maxSequences: 1,
});
const s = engine.openSession();
let logits = s.step(Array.from({ length: prompt }, (_, i) => (i * 7919) % 1000));
for (let k = 0; k < 4; k++) logits = s.step([argmax(logits)]);
executor.takeProfile();
const times = [];
for (let k = 0; k < steps; k++) {
  const t = performance.now();
  logits = s.step([argmax(logits)]);
  times.push(performance.now() - t);
}
const stepMs = times.reduce((a, x) => a + x, 0) / steps;
times.sort((a, b) => a - b);
const phases = executor.takeProfile();
s.release();
engine.close();
executor.dispose();

const groups = new Map();
for (const p of phases) {
  // Group by what ran: kernel kind and grid (layers share them).
  const g = groups.get(p.label) ?? {
    n: 0,
    wall: 0,
    busy: new Array(threads).fill(0),
    wait: new Array(threads).fill(0),
  };
  g.n++;
  g.wall += p.wall / steps;
  p.busy.forEach((b, t) => (g.busy[t] += b / steps));
  p.wait.forEach((w, t) => (g.wait[t] += w / steps));
  groups.set(p.label, g);
}
const wall = phases.reduce((a, p) => a + p.wall, 0) / steps;
const busy = phases.reduce((a, p) => a + p.busy.reduce((x, y) => x + y, 0), 0) / steps;
console.log(
  `${model}: ${threads} threads, ${steps} decode steps, claims/thread ${claimsArg ?? "default"}, load ${os.loadavg()[0].toFixed(2)}`,
);
console.log(
  `step min ${times[0].toFixed(2)} ms, median ${times[steps >> 1].toFixed(2)} ms, mean ${stepMs.toFixed(2)} ms: region ${wall.toFixed(2)} ms (${phases.length} phases), outside ${(stepMs - wall).toFixed(2)} ms; threads busy ${((100 * busy) / (threads * wall)).toFixed(1)}% of region`,
);
console.log("phases/step  wall ms  busy ms/thread  wait ms/thread  idle%  label");
for (const [label, g] of [...groups].sort((a, b) => b[1].wall - a[1].wall)) {
  const b = g.busy.reduce((x, y) => x + y, 0);
  const idle = 100 * (1 - b / (threads * g.wall));
  console.log(
    `${String(g.n).padStart(11)}  ${g.wall.toFixed(2).padStart(7)}  ${g.busy
      .map((x) => x.toFixed(2))
      .join("/")
      .padStart(14)}  ${g.wait
      .map((x) => x.toFixed(2))
      .join("/")
      .padStart(14)}  ${idle.toFixed(1).padStart(5)}  ${label}`,
  );
}

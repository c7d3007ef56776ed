// Benchmark: `compile` on real traced graphs (the models tracers) — Llama-3.2-1B decode from its released
// config.json, and each fixtures/hf family — per target kind: dispatches per layer, outside layers,
// total (unfused -> fused) and compile time (best of 3, after a warm-up). Needs `pnpm build` first. Writes
// bench-results/<date>-compile-dispatches.json (fused dispatches per decode token, the unfused count as the anchor).
import { existsSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { figure, fixture, gitCommit, loadSampler, needFixture, ratiosOf, writeBenchResult } from "@poot/testkit";

if (!existsSync(new URL("../dist/index.js", import.meta.url))) {
  console.error("bench: @poot/cli is not built; run `pnpm build` (or `pnpm bench`, which builds first)");
  process.exit(1);
}
const { bufferIo, runCli } = await import("../dist/index.js");

const missing = needFixture("hf", "configs/llama-3.2-1b.json");
if (missing !== undefined) {
  console.log(`bench compile: skipped, ${missing}`);
  process.exit(0);
}
const fix = fixture();

const models = [
  ["llama-3.2-1b", "llama-3.2-1b (config.json, decode, context 2048)", join(fix, "configs", "llama-3.2-1b.json")],
];
for (const fam of readdirSync(join(fix, "hf")))
  if (existsSync(join(fix, "hf", fam, "config.json")) && existsSync(join(fix, "hf", fam, "model.safetensors")))
    models.push([fam, `${fam} (fixture, decode)`, join(fix, "hf", fam)]);
const commit = gitCommit();
const load = loadSampler();
const cases = [];

async function report(model, target) {
  const io = bufferIo();
  const code = await runCli(["compile", model, "--target", target, "--json"], { io });
  if (code !== 0) throw new Error(`poot compile ${model} --target ${target} failed: ${io.stderr()}`);
  return JSON.parse(io.stdout());
}

for (const [id, name, model] of models) {
  console.log(name);
  for (const target of ["cpu", "wgpu", "vulkan", "cuda", "rocm", "aie"]) {
    await report(model, target);
    let best;
    for (let i = 0; i < 3; i++) {
      const r = await report(model, target);
      if (best === undefined || r.compileMs < best.compileMs) best = r;
    }
    load.sample();
    const metrics = {
      dispatchesPerToken: figure([best.fusedDispatches], "dispatches/token"),
      compileMs: figure([best.compileMs], "ms"),
    };
    const anchorMetrics = { dispatchesPerToken: figure([best.unfusedDispatches], "dispatches/token") };
    cases.push({
      id: `${id}-${target}`,
      label: `${name}, ${target}`,
      backend: target,
      format: null,
      numerics: null,
      model: relative(join(fix, ".."), model),
      metrics,
      anchor: "unfused",
      anchorMetrics,
      ratios: ratiosOf(metrics, anchorMetrics),
    });
    const per = Object.values(best.dispatchesPerLayer);
    console.log(
      `  ${target.padEnd(6)} ${String(best.unfusedDispatches).padStart(5)} -> ${String(best.fusedDispatches).padStart(4)} dispatches  per layer max ${Math.max(...per)}  outside layers ${best.dispatchesOutsideLayers}  compile ${best.compileMs.toFixed(1)} ms`,
    );
  }
}

const file = writeBenchResult({
  name: "compile-dispatches",
  commit,
  title: "poot compile: kernel dispatches per decode token, fused against the primitive graph, per target",
  load: load.summary(),
  settings: { mode: "decode", runs: 3, compileMs: "best of 3 after a warm-up" },
  anchors: [
    { id: "unfused", name: "the primitive graph, one dispatch per primitive (poot compile's unfusedDispatches)" },
  ],
  cases,
  notes: ["Counts, not timings: the same on every machine. compileMs is the best of 3 compiles on this machine."],
});
console.log(`wrote ${relative(join(fix, ".."), file)}`);

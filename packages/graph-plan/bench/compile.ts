// Compile benchmark: Llama-3.2-1B decode (from the real config.json, no weights) for each target kind.
// Prints dispatches unfused/fused, per layer and outside layers, per kernel kind, and compile time in ms.

import { readFileSync } from "node:fs";
import { dispatchCount } from "@poot/graph-ir";
import { fixture, needFixture } from "@poot/testkit";
import { BACKEND_KINDS, compile, defaultTarget } from "../src/index.js";
import { buildLlama, shapeFromConfig } from "../test/llama.js";

const missing = needFixture("configs/llama-3.2-1b.json");
if (missing !== undefined) {
  console.log(`skipped: ${missing}`);
  process.exit(0);
}
const cfgPath = fixture("configs/llama-3.2-1b.json");
const config = JSON.parse(readFileSync(cfgPath, "utf8")) as Record<string, unknown>;
const families = [{ family: "llama (Llama-3.2-1B, hand-built decoder)", shape: shapeFromConfig(config, 4096, 1) }];
for (const { family, shape } of families) {
  const graph = buildLlama(shape);
  console.log(
    `${family}: ${graph.eqns.length} primitive equations, ${dispatchCount(graph)} unfused dispatches, ${shape.layers} layers`,
  );
  for (const kind of BACKEND_KINDS) {
    compile(graph, defaultTarget(kind)); // warm-up (JIT)
    const runs = 3;
    let ms = Infinity,
      program = compile(graph, defaultTarget(kind));
    for (let i = 0; i < runs; i++) {
      program = compile(graph, defaultTarget(kind));
      ms = Math.min(ms, program.compileMs);
    }
    const b = program.dispatchBreakdown();
    const perLayer = [...b.perLayer.values()];
    const kinds: Record<string, number> = {};
    for (const p of program.plans())
      if (p.kernel.provenance !== "none")
        kinds[p.kernel.request.kind] = (kinds[p.kernel.request.kind] ?? 0) + p.dispatches.length;
    console.log(
      `  ${kind.padEnd(6)} fused ${String(b.total).padStart(4)}  per layer max ${Math.max(...perLayer)}  outside layers ${b.other}  compile ${ms.toFixed(1)} ms  kinds ${JSON.stringify(kinds)}`,
    );
  }
}

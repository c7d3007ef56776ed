// GPU entry point (bundled by packages/backend-vulkan/tools/gpu-bundle.sh): the demo model (models/demo) through
// @poot/runtime on the Vulkan executor against transformers' reference, and decode tok/s of a Llama-3.2-1B-shaped
// random-weight model (folder in LLAMA1B, written by packages/backend-vulkan/tools/make-llama1b.py).

import * as fs from "node:fs";
import * as path from "node:path";
import { openSafetensors } from "@poot/models";
import { Engine, generateAll } from "@poot/runtime";
import { createVulkanExecutor, type VulkanProgram } from "@poot/backend-vulkan";

interface DemoReference {
  prompt_ids: number[];
  greedy_ids: number[];
}
const DEMO = path.resolve("models/demo");
const outDir = process.env.OUT ?? ".gpu/out";
fs.mkdirSync(outDir, { recursive: true });
const report: Record<string, unknown> = { date: new Date().toISOString() };
let failures = 0;

function demo(): Record<string, unknown> {
  const ref = JSON.parse(fs.readFileSync(path.join(DEMO, "reference.json"), "utf8")) as DemoReference;
  const prompt = openSafetensors(path.join(DEMO, "reference.safetensors")).readF32Sync("prompt_logits");
  const executor = createVulkanExecutor();
  const engine = Engine.load(DEMO, { executor, context: 64, prefillChunk: 8 });
  try {
    const s = engine.openSession();
    const V = engine.config.vocabSize,
      T = ref.prompt_ids.length;
    const first = s.step(ref.prompt_ids);
    const want = prompt.subarray((T - 1) * V, T * V);
    let d = 0,
      m = 0;
    for (let i = 0; i < V; i++) {
      d = Math.max(d, Math.abs(first[i]! - want[i]!));
      m = Math.max(m, Math.abs(want[i]!));
    }
    s.release();
    const n = ref.greedy_ids.length;
    const before = { ...engine.stats };
    const r = generateAll(engine, engine.openSession(), ref.prompt_ids, {
      maxTokens: n,
      temperature: 0,
      ignoreEos: true,
    });
    const decodeTokens = engine.stats.decodeTokens - before.decodeTokens,
      decodeMs = engine.stats.decodeMs - before.decodeMs;
    const idsEqual = r.ids.length === n && r.ids.every((x: number, i: number) => x === ref.greedy_ids[i]);
    const ok = d / m <= 1e-4 && idsEqual;
    if (!ok) failures++;
    return {
      ok,
      logitsRelErr: d / m,
      idsEqual,
      ids: r.ids,
      want: ref.greedy_ids,
      decodeTokens,
      decodeMs,
      decodeTokPerSec: (1000 * decodeTokens) / decodeMs,
      device: executor.caps.device,
    };
  } finally {
    engine.close();
    executor.dispose();
  }
}

function llama1b(dir: string): Record<string, unknown> {
  const executor = createVulkanExecutor({ timestamps: true });
  const t0 = performance.now();
  const engine = Engine.load(dir, { executor, weights: "bf16", context: 256, prefillChunk: 16 });
  try {
    const prompt = Array.from({ length: 16 }, (_, i) => (i * 7919) % 128000);
    const warm = generateAll(engine, engine.openSession(), prompt, { maxTokens: 4, temperature: 0, ignoreEos: true });
    const loadMs = performance.now() - t0;
    const before = { ...engine.stats };
    const s = engine.openSession();
    const r = generateAll(engine, s, prompt, { maxTokens: 64, temperature: 0, ignoreEos: true });
    const decodeTokens = engine.stats.decodeTokens - before.decodeTokens,
      decodeMs = engine.stats.decodeMs - before.decodeMs;
    // One more decode step on a fresh session, for per-dispatch GPU timestamps.
    const s2 = engine.openSession();
    s2.step(prompt);
    s2.step([1]);
    const prog = engine.decodeProgram(1) as VulkanProgram;
    const t = executor.device.timings(prog.recordingOf(engine.state())) ?? [];
    const gpuMs = t.reduce((a, x) => a + x.ns, 0) / 1e6;
    return {
      warmIds: warm.ids.length,
      generated: r.ids.length,
      loadAndWarmMs: loadMs,
      decodeTokens,
      decodeMs,
      decodeTokPerSec: (1000 * decodeTokens) / decodeMs,
      dispatchesPerToken: prog.dispatchesPerStep(),
      gpuMsPerToken: gpuMs,
      fallbacks: prog.lowered.fallbacks,
      deviceBytes: executor.deviceBytes(),
      slowest: [...t]
        .sort((a, b) => b.ns - a.ns)
        .slice(0, 8)
        .map((x) => `${x.label} ${(x.ns / 1e3).toFixed(1)} us`),
    };
  } finally {
    engine.close();
    executor.dispose();
  }
}

for (const [name, fn] of [
  ["demo", demo],
  ["llama1b", () => llama1b(process.env.LLAMA1B ?? "/tmp/llama1b")],
] as const) {
  try {
    report[name] = fn();
  } catch (e) {
    failures++;
    report[name] = { error: (e as Error).stack };
  }
  console.log(name, JSON.stringify(report[name], null, 1));
}
report.failures = failures;
fs.writeFileSync(path.join(outDir, "vulkan-model.json"), JSON.stringify(report, null, 1));
console.log(`${failures} failure(s)`);
process.exit(failures ? 1 : 0);

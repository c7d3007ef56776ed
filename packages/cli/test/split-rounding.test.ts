// The measurement behind decision 1708 (run on demand: POOT_MEASURE_SPLIT=1, lavapipe or a GPU for wgpu/vulkan):
// for each HF fixture family, teacher-forced decode logits along the prompt and transformers' greedy continuation
// on eval, cpu, wgpu, vulkan and the cpu+GPU splits, each against transformers' float64 forward and against each
// other (max over positions of max |a - b| / max |b|). Prints one line per family; asserts nothing but greedy-free
// sanity (every run finite), since it exists to measure how far apart f32 backends are.
import * as fs from "node:fs";
import * as path from "node:path";
import { openSafetensors } from "@poot/models";
import { Engine, parsePlacement, type BlockDevice } from "@poot/runtime";
import { fixture } from "@poot/testkit";
import { describe, expect, test } from "vitest";
import { createExecutor } from "../src/commands/backends.js";
import { skipReason } from "./blocks-split.js";

const ON = process.env["POOT_MEASURE_SPLIT"] === "1";

function rel(a: Float32Array, r: Float32Array): number {
  let d = 0,
    m = 0;
  for (let i = 0; i < r.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - r[i]!));
    m = Math.max(m, Math.abs(r[i]!));
  }
  return d / m;
}

describe.skipIf(!ON)("split rounding: f32 backends vs float64 and vs each other (decision 1708)", () => {
  test("measure", async () => {
    for (const b of ["vulkan", "wgpu"] as const) {
      const why = await skipReason(b);
      if (why !== undefined) throw new Error(`${b}: ${why}`);
    }
    const fams = (process.env["FAMS"] ?? "llama3,gemma3,qwen3,qwen35,olmoe").split(",");
    for (const fam of fams) {
      const dir = fixture("hf", fam);
      const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as {
        prompt_ids: number[];
        greedy_ids: number[];
      };
      const full = openSafetensors(path.join(dir, "reference.safetensors")).readF32Sync("full_logits");
      const ids = [...ref.prompt_ids, ...ref.greedy_ids].slice(0, 24);
      const runs: Record<string, Float32Array[]> = {};
      const configs: [string, string[] | null][] = [
        ["eval", null],
        ["cpu", null],
        ["wgpu", null],
        ["vulkan", null],
        ["cpu+wgpu", ["cpu", "wgpu"]],
        ["cpu+vulkan", ["cpu", "vulkan"]],
      ];
      let V = 0;
      for (const [name, split] of configs) {
        const devs: BlockDevice[] = (split ?? [name]).map((n) => ({ name: n, executor: createExecutor(n, "test") }));
        try {
          const probe = Engine.load(dir, { executor: devs[0]!.executor, context: 2, tokenizer: null });
          const L = probe.config.numLayers;
          V = probe.config.vocabSize;
          probe.close();
          const engine = Engine.load(dir, {
            executor: devs[0]!.executor,
            context: 32,
            tokenizer: null,
            ...(split === null
              ? {}
              : {
                  devices: devs,
                  placement: parsePlacement(
                    L > 1 ? `0:cpu,1-${L - 1}:${split[1]},head:cpu` : `embed:cpu,0:${split[1]},head:cpu`,
                    L,
                    split,
                  ),
                }),
          });
          const s = engine.openSession();
          runs[name] = ids.map((t) => s.step([t]).slice());
          s.release();
          engine.close();
        } finally {
          for (const d of devs) d.executor.dispose();
        }
      }
      const row = (r: number) => full.subarray(r * V, (r + 1) * V);
      const worst = (a: Float32Array[], b: (k: number) => Float32Array) => Math.max(...a.map((x, k) => rel(x, b(k))));
      const out: string[] = [];
      for (const n of Object.keys(runs)) out.push(`${n}-f64 ${worst(runs[n]!, row).toExponential(2)}`);
      for (const [a, b] of [
        ["cpu", "eval"],
        ["wgpu", "cpu"],
        ["vulkan", "cpu"],
        ["wgpu", "vulkan"],
        ["cpu+wgpu", "cpu"],
        ["cpu+wgpu", "wgpu"],
        ["cpu+vulkan", "cpu"],
        ["cpu+vulkan", "vulkan"],
      ] as const)
        out.push(`${a}-${b} ${worst(runs[a]!, (k) => runs[b]![k]!).toExponential(2)}`);
      console.log(`split rounding ${fam}: ${out.join("; ")}`);
      for (const r of Object.values(runs)) for (const x of r) expect(x.every(Number.isFinite)).toBe(true);
    }
  }, 3_600_000);
});

// `--backend cpu` on the GPTQ / AWQ / FP8 safetensors checkpoints of the llama3 fixture (fixtures/hf/llama3-*, see
// packages/models/tools/hf-quant): weights bound packed (fewer bytes than f32), prompt logits within 1e-4 of the
// float64 forward of the dequantized weights, and 16 greedy ids (KV cache, one token per step) equal to it; the bytes
// held are the listed packed bytes (act-order GPTQ at its plain-GPTQ 0.625 B/weight, x gathered instead).
// llama3-fp8-static is a compressed-tensors W8A8-static file written by HF safetensors (tools/hf-quant/make_fp8_static.py).
import * as fs from "node:fs";
import { createCpuExecutor } from "@poot/backend-cpu";
import { openCheckpoint, openSafetensors } from "@poot/models";
import { Engine } from "@poot/runtime";
import { fixture, relErr, argmax } from "@poot/testkit";
import { describe, expect, test } from "vitest";

// llama3-fp8-static twice: activations f32 (the default) against the exact-activation forward, and `fp8-static`
// (decision 2610) against the forward that quantizes each linear's input with its input_scale (ml_dtypes' e4m3).
// llama3-fp8 also with `fp8-dynamic` against its dynamic-activation reference (tools/hf-quant/make_fp8_dynamic.py).
type Activations = "f32" | "fp8-static" | "fp8-dynamic";
const CASES: { dir: string; activations: Activations }[] = [
  ...["llama3-gptq", "llama3-awq", "llama3-fp8", "llama3-fp8-static"].map((dir) => ({
    dir,
    activations: "f32" as const,
  })),
  { dir: "llama3-fp8-static", activations: "fp8-static" },
  { dir: "llama3-fp8", activations: "fp8-dynamic" },
];
/** The reference logits [T, V] and greedy ids of a case. */
function referenceOf(
  dir: string,
  activations: Activations,
): { promptIds: number[]; logits: Float32Array; greedy: number[] } {
  const json = (file: string) => JSON.parse(fs.readFileSync(fixture("hf", dir, file), "utf8"));
  const st = (file: string, name: string) => openSafetensors(fixture("hf", dir, file)).readF32Sync(name);
  if (activations === "fp8-dynamic") {
    const r = json("reference-dynamic.json");
    return {
      promptIds: r.prompt_ids,
      logits: st("reference-dynamic.safetensors", "dynamic_prompt_logits"),
      greedy: r.dynamic_greedy_ids,
    };
  }
  const r = json("reference.json");
  const stat = activations === "fp8-static";
  return {
    promptIds: r.prompt_ids,
    logits: st("reference.safetensors", stat ? "static_prompt_logits" : "prompt_logits"),
    greedy: stat ? r.static_greedy_ids : r.greedy_ids,
  };
}

describe("--backend cpu on fixtures/hf/llama3-{gptq,awq,fp8,fp8-static}, weights packed", () => {
  for (const { dir, activations } of CASES) {
    const label = `${dir}${activations === "f32" ? "" : ` (activations ${activations})`}`;
    test(`${label}: prompt logits within 1e-4 of the float64 forward; 16 greedy ids equal`, () => {
      const { promptIds, logits: expected, greedy: greedyIds } = referenceOf(dir, activations);
      const ref = { prompt_ids: promptIds };
      const executor = createCpuExecutor({ threads: 2 });
      const engine = Engine.load(fixture("hf", dir), {
        executor,
        context: 32,
        prefillChunk: 8,
        tokenizer: null,
        activations,
      });
      try {
        const V = engine.config.vocabSize,
          T = ref.prompt_ids.length;
        const s = engine.openSession();
        let worst = 0;
        let logits: Float32Array = new Float32Array(0);
        for (const end of [8, T]) {
          logits = s.step(ref.prompt_ids.slice(s.length, end));
          const err = relErr(logits, expected.subarray((end - 1) * V, end * V));
          worst = Math.max(worst, err);
          expect(err, `position ${end - 1}`).toBeLessThanOrEqual(1e-4);
        }
        const ids: number[] = [];
        for (let g = 0; g < greedyIds.length; g++) {
          ids.push(argmax(logits));
          if (g + 1 < greedyIds.length) logits = s.step([ids.at(-1)!]);
        }
        expect(ids).toEqual(greedyIds);
        s.release();
        const held = executor.deviceBytes().weights;
        // f32 would hold 4 bytes per parameter of the 2 × 36,864 linear weights alone.
        expect(held).toBeLessThan(2 * 36_864 * 4);
        // Exactly the listed packed bytes: act-order GPTQ bound at its plain-GPTQ size, nothing expanded on load.
        const ck = openCheckpoint(fixture("hf", dir));
        expect(held).toBe(ck.tensors().reduce((n, t) => n + t.byteLength, 0));
        ck.close();
        console.log(`cpu ${label}: max rel err ${worst.toExponential(2)}; weights held ${held} B`);
      } finally {
        engine.close();
        executor.dispose();
      }
    }, 600_000);
  }
});

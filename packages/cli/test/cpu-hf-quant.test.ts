// `--backend cpu` on the GPTQ / AWQ / FP8 safetensors checkpoints of the llama3 fixture (fixtures/hf/llama3-*, see
// packages/models/tools/hf-quant): weights bound packed (fewer bytes than f32), prompt logits within 1e-4 of the
// float64 forward of the dequantized weights, and 16 greedy ids (KV cache, one token per step) equal to it; the bytes
// held are the listed packed bytes (act-order GPTQ at its plain-GPTQ 0.625 B/weight, x gathered instead).
import * as fs from "node:fs";
import { createCpuExecutor } from "@poot/backend-cpu";
import { openCheckpoint, openSafetensors } from "@poot/models";
import { Engine } from "@poot/runtime";
import { fixture, relErr, argmax } from "@poot/testkit";
import { describe, expect, test } from "vitest";

describe("--backend cpu on fixtures/hf/llama3-{gptq,awq,fp8}, weights packed", () => {
  for (const dir of ["llama3-gptq", "llama3-awq", "llama3-fp8"]) {
    test(`${dir}: prompt logits within 1e-4 of the float64 forward; 16 greedy ids equal`, () => {
      const ref = JSON.parse(fs.readFileSync(fixture("hf", dir, "reference.json"), "utf8")) as {
        prompt_ids: number[];
        greedy_ids: number[];
      };
      const expected = openSafetensors(fixture("hf", dir, "reference.safetensors")).readF32Sync("prompt_logits");
      const executor = createCpuExecutor({ threads: 2 });
      const engine = Engine.load(fixture("hf", dir), { executor, context: 32, prefillChunk: 8, tokenizer: null });
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
        for (let g = 0; g < ref.greedy_ids.length; g++) {
          ids.push(argmax(logits));
          if (g + 1 < ref.greedy_ids.length) logits = s.step([ids.at(-1)!]);
        }
        expect(ids).toEqual(ref.greedy_ids);
        s.release();
        const held = executor.deviceBytes().weights;
        // f32 would hold 4 bytes per parameter of the 2 × 36,864 linear weights alone.
        expect(held).toBeLessThan(2 * 36_864 * 4);
        // Exactly the listed packed bytes: act-order GPTQ bound at its plain-GPTQ size, nothing expanded on load.
        const ck = openCheckpoint(fixture("hf", dir));
        expect(held).toBe(ck.tensors().reduce((n, t) => n + t.byteLength, 0));
        ck.close();
        console.log(`cpu ${dir}: max rel err ${worst.toExponential(2)}; weights held ${held} B`);
      } finally {
        engine.close();
        executor.dispose();
      }
    }, 600_000);
  }
});

// The traced forward of every HF fixture family against transformers' float64 reference: prompt logits
// (f32 and bf16 weights), greedy ids through the KV-cache decode graph, and prompt+greedy logits in one pass.
import * as fs from "node:fs";
import { describe, expect, test } from "vitest";
import { LoadedModel, openSafetensors } from "@poot/models";
import { fixture, needFixture, relErr } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("hf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

const FAMILIES = ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"] as const;

interface Reference {
  prompt_ids: number[];
  greedy_ids: number[];
}

describe.skipIf(FIXTURES === undefined)(`HF fixtures (${FIXTURES === undefined ? NO_FIXTURES : "present"})`, () => {
  for (const fam of FAMILIES) {
    describe(fam, () => {
      const dir = fixture("hf", fam);
      const ref = JSON.parse(fs.readFileSync(fixture("hf", fam, "reference.json"), "utf8")) as Reference;
      const refs = openSafetensors(fixture("hf", fam, "reference.safetensors"));
      const promptLogits = refs.readF32Sync("prompt_logits");
      const fullLogits = refs.readF32Sync("full_logits");

      test("prompt logits (f32 weights) within 1e-4", () => {
        const m = LoadedModel.open(dir);
        const rel = relErr(m.logits(ref.prompt_ids), promptLogits);
        console.log(`${fam} f32 prompt rel ${rel.toExponential(2)}`);
        expect(rel).toBeLessThanOrEqual(1e-4);
        m.close();
      });

      test("prompt logits (bf16 weights) within 1e-4", () => {
        const m = LoadedModel.open(dir, { weights: "bf16" });
        const rel = relErr(m.logits(ref.prompt_ids), promptLogits);
        console.log(`${fam} bf16 prompt rel ${rel.toExponential(2)}`);
        expect(rel).toBeLessThanOrEqual(1e-4);
        m.close();
      });

      test("greedy decode with the KV cache reproduces greedy_ids; prompt+greedy logits match full_logits", () => {
        const m = LoadedModel.open(dir);
        const gen = m.generate(ref.prompt_ids, ref.greedy_ids.length);
        expect(gen.ids).toEqual(ref.greedy_ids);
        const V = m.config.vocabSize,
          T = ref.prompt_ids.length;
        // Each decode step's logits are rows T-1 .. T+14 of the one-pass full logits.
        gen.logits.forEach((row, n) =>
          expect(relErr(row, fullLogits.subarray((T - 1 + n) * V, (T + n) * V))).toBeLessThanOrEqual(1e-4),
        );
        const rel = relErr(m.logits([...ref.prompt_ids, ...ref.greedy_ids]), fullLogits);
        console.log(`${fam} full rel ${rel.toExponential(2)}`);
        expect(rel).toBeLessThanOrEqual(1e-4);
        m.close();
      });
    });
  }
});

// Logits through the runtime against transformers' float64 full_logits (prompt + greedy continuation),
// decode after a chunked prefill, on f32 and bf16 weights; folded and per-step `evaluate` agree bit for bit.
import * as fs from "node:fs";
import { type Executor } from "@poot/executor";
import { createEvalExecutor } from "@poot/backend-reference";
import { openSafetensors } from "@poot/models";
import { Engine } from "@poot/runtime";
import { describe, expect, test } from "vitest";
import { fixture, needFixture, relErr } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("hf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

interface Reference {
  prompt_ids: number[];
  greedy_ids: number[];
}

/** Logits after the prompt and after each of the first `n` greedy ids, fed one by one. */
function stepLogits(
  dir: string,
  ref: Reference,
  executor: Executor,
  weights: "f32" | "bf16",
  n: number,
): Float32Array[] {
  const engine = Engine.load(dir, { executor, weights, context: 40, prefillChunk: 8 });
  try {
    const s = engine.openSession();
    const rows = [s.step(ref.prompt_ids)];
    for (let k = 0; k < n; k++) rows.push(s.step([ref.greedy_ids[k]!]));
    return rows;
  } finally {
    engine.close();
  }
}

describe.skipIf(FIXTURES === undefined)(
  `runtime logits vs transformers (${FIXTURES === undefined ? NO_FIXTURES : "present"})`,
  () => {
    for (const fam of ["llama3", "gemma3", "qwen35"] as const) {
      test(`${fam}: every step's logits within 1e-4 of full_logits (f32 and bf16 weights)`, () => {
        const ref = JSON.parse(fs.readFileSync(fixture("hf", fam, "reference.json"), "utf8")) as Reference;
        const full = openSafetensors(fixture("hf", fam, "reference.safetensors")).readF32Sync("full_logits");
        const T = ref.prompt_ids.length;
        for (const weights of ["f32", "bf16"] as const) {
          const rows = stepLogits(fixture("hf", fam), ref, createEvalExecutor(), weights, 6);
          const V = rows[0]!.length;
          rows.forEach((row, k) =>
            expect(
              relErr(row, full.subarray((T - 1 + k) * V, (T + k) * V)),
              `${fam} ${weights} step ${k}`,
            ).toBeLessThanOrEqual(1e-4),
          );
        }
      });
    }

    test("llama3: the folded eval executor and evaluate-per-step give identical bits", () => {
      const ref = JSON.parse(fs.readFileSync(fixture("hf", "llama3", "reference.json"), "utf8")) as Reference;
      const a = stepLogits(fixture("hf", "llama3"), ref, createEvalExecutor(), "bf16", 3);
      const b = stepLogits(fixture("hf", "llama3"), ref, createEvalExecutor({ foldWeights: false }), "bf16", 3);
      a.forEach((row, k) => expect(Buffer.from(row.buffer).equals(Buffer.from(b[k]!.buffer))).toBe(true));
    });
  },
);

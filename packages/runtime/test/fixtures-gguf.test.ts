// Packed GGUF weights (real Q4_K / Q6_K and Q8_0 blocks) through the runtime: the executor binds the packed
// bytes and folds their decode once; logits at the end of each prompt step (8, 8 and 4 tokens) match a
// float64 numpy forward of the very same stored weights (f64-logits-<TYPE>.bin) within 1e-4.
import * as fs from "node:fs";
import { createEvalExecutor } from "@poot/backend-reference";
import { Engine } from "@poot/runtime";
import { describe, expect, test } from "vitest";
import { fixture, needFixture } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("gguf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

function readF32(file: string): Float32Array {
  const b = fs.readFileSync(file);
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}

describe.skipIf(FIXTURES === undefined)(
  `GGUF fixtures through the runtime (${FIXTURES === undefined ? NO_FIXTURES : "present"})`,
  () => {
    for (const type of ["Q4_K_M", "Q8_0"] as const) {
      test(`llama3-w256 ${type}: prompt logits of every chunk boundary within 1e-4 of the f64 forward`, () => {
        const dir = fixture("gguf", "llama3-w256");
        const ref = JSON.parse(fs.readFileSync(`${dir}/reference-${type}.json`, "utf8")) as { prompt_ids: number[] };
        const f64 = readF32(`${dir}/f64-logits-${type}.bin`);
        const engine = Engine.load(`${dir}/model-${type}.gguf`, {
          executor: createEvalExecutor(),
          context: 24,
          prefillChunk: 8,
        });
        try {
          const V = engine.config.vocabSize;
          const s = engine.openSession();
          // Steps end at positions 8, 16, 20: each returned row is that position's prompt logits.
          for (const end of [8, 16, 20]) {
            const row = s.step(ref.prompt_ids.slice(s.length, end));
            const want = f64.subarray((end - 1) * V, end * V);
            let d = 0,
              m = 0;
            for (let i = 0; i < V; i++) {
              d = Math.max(d, Math.abs(row[i]! - want[i]!));
              m = Math.max(m, Math.abs(want[i]!));
            }
            expect(d / m, `${type} position ${end - 1}`).toBeLessThanOrEqual(1e-4);
          }
        } finally {
          engine.close();
        }
      });
    }
  },
);

// Greedy generation through the runtime (eval executor, chunked prefill, KV/recurrent State kept in the
// executor) reproduces transformers' greedy_ids for every HF fixture family; batched decode agrees too.
import * as fs from "node:fs";
import { createEvalExecutor } from "@poot/backend-reference";
import { Engine, generateAll } from "@poot/runtime";
import { describe, expect, test } from "vitest";
import { fixture, needFixture } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("hf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

const FAMILIES = ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"] as const;

interface Reference {
  prompt_ids: number[];
  greedy_ids: number[];
}

describe.skipIf(FIXTURES === undefined)(
  `HF fixtures through the runtime (${FIXTURES === undefined ? NO_FIXTURES : "present"})`,
  () => {
    for (const fam of FAMILIES) {
      test(`${fam}: greedy ids equal greedy_ids (prompt prefilled in chunks 16+4, then 15 decode steps)`, () => {
        const ref = JSON.parse(fs.readFileSync(fixture("hf", fam, "reference.json"), "utf8")) as Reference;
        const engine = Engine.load(fixture("hf", fam), {
          executor: createEvalExecutor(),
          context: 48,
          prefillChunk: 16,
        });
        try {
          expect(engine.chunks(ref.prompt_ids.length)).toEqual([16, 4]);
          const s = engine.openSession();
          const r = generateAll(engine, s, ref.prompt_ids, {
            maxTokens: ref.greedy_ids.length,
            temperature: 0,
            ignoreEos: true,
          });
          expect(r.ids).toEqual(ref.greedy_ids);
          expect(r.finishReason).toBe("length");
          expect(s.length).toBe(ref.prompt_ids.length + ref.greedy_ids.length - 1);
        } finally {
          engine.close();
        }
      });
    }

    test("qwen35 (hybrid: KV + conv + recurrent State) and llama3: two sessions decoded in one batch continue greedy_ids", () => {
      for (const fam of ["qwen35", "llama3"] as const) {
        const ref = JSON.parse(fs.readFileSync(fixture("hf", fam, "reference.json"), "utf8")) as Reference;
        const engine = Engine.load(fixture("hf", fam), {
          executor: createEvalExecutor(),
          context: 40,
          prefillChunk: 8,
        });
        try {
          // Session a starts from the prompt; session b from the prompt plus the first 5 greedy tokens.
          const a = engine.openSession(),
            b = engine.openSession();
          a.feed(ref.prompt_ids);
          b.feed([...ref.prompt_ids, ...ref.greedy_ids.slice(0, 5)]);
          const got: [number[], number[]] = [[], []];
          for (let k = 0; k < 6; k++) {
            const rows = engine.stepBatch([a, b]);
            rows.forEach((row, i) => {
              let best = 0;
              for (let j = 1; j < row.length; j++) if (row[j]! > row[best]!) best = j;
              got[i as 0 | 1].push(best);
              (i === 0 ? a : b).commit(best);
            });
          }
          expect(got[0]).toEqual(ref.greedy_ids.slice(0, 6));
          expect(got[1]).toEqual(ref.greedy_ids.slice(5, 11));
          expect(engine.stats.decodeTokens).toBeGreaterThanOrEqual(12);
        } finally {
          engine.close();
        }
      }
    });
  },
);

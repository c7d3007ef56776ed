// The runtime over graph-plan Programs on the eval executor (the gate for compiled paths end to end):
// prefill chunks, single-token decode and batched decode compiled for a target still reproduce greedy_ids.
import * as fs from "node:fs";
import { createEvalExecutor } from "@poot/backend-reference";
import { compile, defaultTarget } from "@poot/graph-plan";
import { Engine, generateAll } from "@poot/runtime";
import { describe, expect, test } from "vitest";
import { fixture, needFixture } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("hf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

interface Reference {
  prompt_ids: number[];
  greedy_ids: number[];
}

describe.skipIf(FIXTURES === undefined)(
  `compiled programs through the runtime (${FIXTURES === undefined ? NO_FIXTURES : "present"})`,
  () => {
    for (const [fam, kind] of [
      ["llama3", "cpu"],
      ["qwen35", "cuda"],
    ] as const) {
      test(`${fam} compiled for ${kind}: greedy ids single and batched equal greedy_ids`, () => {
        const ref = JSON.parse(fs.readFileSync(fixture("hf", fam, "reference.json"), "utf8")) as Reference;
        const modes: string[] = [];
        const engine = Engine.load(fixture("hf", fam), {
          executor: createEvalExecutor(),
          context: 40,
          prefillChunk: 16,
          compileGraph: (g, mode) => {
            modes.push(mode);
            return compile(g, defaultTarget(kind), { mode });
          },
        });
        try {
          const r = generateAll(engine, engine.openSession(), ref.prompt_ids, {
            maxTokens: 8,
            temperature: 0,
            ignoreEos: true,
          });
          expect(r.ids).toEqual(ref.greedy_ids.slice(0, 8));
          const a = engine.openSession(),
            b = engine.openSession();
          a.feed(ref.prompt_ids);
          b.feed([...ref.prompt_ids, ...ref.greedy_ids.slice(0, 2)]);
          const rows = engine.stepBatch([a, b]);
          const best = (row: Float32Array) => row.indexOf(Math.max(...row));
          expect([best(rows[0]!), best(rows[1]!)]).toEqual([ref.greedy_ids[0], ref.greedy_ids[2]]);
          expect(modes).toContain("prefill");
          expect(modes).toContain("decode");
        } finally {
          engine.close();
        }
      });
    }
  },
);

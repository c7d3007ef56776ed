// Batched decode: two sequences of different lengths share one step of the batched-decode graph (own Pos,
// own KV cache / recurrent state rows); each row's logits must match transformers' one-pass full_logits.
import * as fs from "node:fs";
import { describe, expect, test } from "vitest";
import { LoadedModel, TraceError, openSafetensors } from "@poot/models";
import { fixture, needFixture, relErr } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("hf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

describe.skipIf(FIXTURES === undefined)(
  `batched decode (${FIXTURES === undefined ? NO_FIXTURES : "fixtures present"})`,
  () => {
    for (const fam of ["llama3", "gemma3", "qwen35"]) {
      test(`${fam}: one batched step for sequences at positions 20 and 25 matches full_logits rows`, () => {
        const dir = fixture("hf", fam);
        const ref = JSON.parse(fs.readFileSync(fixture("hf", fam, "reference.json"), "utf8")) as {
          prompt_ids: number[];
          greedy_ids: number[];
        };
        const full = openSafetensors(fixture("hf", fam, "reference.safetensors")).readF32Sync("full_logits");
        const m = LoadedModel.open(dir);
        const V = m.config.vocabSize,
          S = 40;
        const all = [...ref.prompt_ids, ...ref.greedy_ids];
        const seqs = [all.slice(0, 20), all.slice(0, 25)];
        // Fill each sequence's cache alone, then stack the states along the batch axis.
        const states = seqs.map(
          (s) =>
            m.step(
              { kind: "decode", context: S, tokens: s.length },
              s,
              [0],
              m.initialState({ kind: "decode", context: S, tokens: s.length }),
            ).state,
        );
        const batched = { kind: "batched-decode", batch: 2, context: S } as const;
        const stacked: Record<string, Float64Array> = {};
        for (const key of Object.keys(states[0]!)) {
          const a = states[0]![key]!,
            b = states[1]![key]!;
          stacked[key] = new Float64Array(a.length + b.length);
          stacked[key].set(a);
          stacked[key].set(b, a.length);
        }
        const r = m.step(batched, [all[20]!, all[25]!], [20, 25], stacked);
        expect(r.logits.length).toBe(2 * V);
        expect(relErr(r.logits.subarray(0, V), full.subarray(20 * V, 21 * V))).toBeLessThanOrEqual(1e-4);
        expect(relErr(r.logits.subarray(V), full.subarray(25 * V, 26 * V))).toBeLessThanOrEqual(1e-4);
        expect(() => m.step(batched, [1, 2], [20, 40], stacked)).toThrow(TraceError);
        m.close();
      });
    }
  },
);

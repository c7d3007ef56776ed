// Paged KV through the reference evaluator: every HF fixture family decodes through a shared page pool read
// via a scrambled page table (pages out of order, shared with another sequence), and must reproduce
// transformers' greedy ids and full_logits rows; a batched paged step of two sequences of different lengths
// must equal each row of the reference.
import * as fs from "node:fs";
import { describe, expect, test } from "vitest";
import { LoadedModel, TraceError, openSafetensors, type GraphKind, type PagedLayout } from "@poot/models";
import type { HostData } from "@poot/graph-ir";
import { fixture, needFixture, relErr } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("hf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

const FAMILIES = ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"] as const;

function argmax(row: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  return best;
}

/** One sequence's pages (its page table row, padded with page 0) and lane. */
interface Seq {
  readonly pages: readonly number[];
  readonly lane: number;
}

const PAGE = 4,
  CONTEXT = 40,
  PER_SEQ = CONTEXT / PAGE;

/** Slots of a paged step: page table rows, the SlotMap rows of each new token, the state lanes. */
function slots(seqs: readonly Seq[], pos: readonly number[], tokens: number): Record<string, number[]> {
  const table: number[] = [],
    map: number[] = [];
  seqs.forEach((s, i) => {
    for (let p = 0; p < PER_SEQ; p++) table.push(s.pages[p] ?? 0);
    for (let t = 0; t < tokens; t++) {
      const at = pos[i]! + t;
      map.push(s.pages[Math.floor(at / PAGE)]! * PAGE + (at % PAGE));
    }
  });
  return { page_table: table, slot_map: map, state_lane: seqs.map((s) => s.lane) };
}

describe.skipIf(FIXTURES === undefined)(
  `paged KV decode (${FIXTURES === undefined ? NO_FIXTURES : "fixtures present"})`,
  () => {
    // 24 pages of 4 rows; sequence A takes pages in a scrambled order, B interleaves with it.
    const paged: PagedLayout = { pageSize: PAGE, pages: 24, lanes: 3 };
    const A: Seq = { pages: [7, 2, 19, 0, 11, 5, 23, 14, 9, 3], lane: 2 };
    const B: Seq = { pages: [1, 20, 8, 16, 4, 12, 22, 6, 17, 10], lane: 0 };

    for (const fam of FAMILIES) {
      test(`${fam}: greedy decode through scrambled pages reproduces greedy_ids and full_logits`, () => {
        const dir = fixture("hf", fam);
        const ref = JSON.parse(fs.readFileSync(fixture("hf", fam, "reference.json"), "utf8")) as {
          prompt_ids: number[];
          greedy_ids: number[];
        };
        const full = openSafetensors(fixture("hf", fam, "reference.safetensors")).readF32Sync("full_logits");
        const m = LoadedModel.open(dir);
        const V = m.config.vocabSize,
          T = ref.prompt_ids.length;
        expect(T + ref.greedy_ids.length).toBeLessThanOrEqual(CONTEXT);
        const kind = (tokens: number): GraphKind & { kind: "decode" } => ({
          kind: "decode",
          context: CONTEXT,
          tokens,
          paged,
        });
        let state: Readonly<Record<string, HostData>> = m.initialState(kind(T));
        // Another sequence fills pages first (B's prompt) and leaves its recurrent state in A's lane, so A's
        // reads must stay within A's own pages and start from a zero recurrent state at position 0.
        state = m.step(
          kind(T),
          ref.prompt_ids.slice().reverse(),
          [0],
          state,
          slots([{ ...B, lane: A.lane }], [0], T),
        ).state;
        let r = m.step(kind(T), ref.prompt_ids, [0], state, slots([A], [0], T));
        state = r.state;
        const ids: number[] = [];
        let worst = 0;
        for (let n = 0; n < ref.greedy_ids.length; n++) {
          const row = r.logits.subarray(r.logits.length - V);
          worst = Math.max(worst, relErr(row, full.subarray((T - 1 + n) * V, (T + n) * V)));
          ids.push(argmax(row));
          if (n === ref.greedy_ids.length - 1) break;
          r = m.step(kind(1), [ids[n]!], [T + n], state, slots([A], [T + n], 1));
          state = r.state;
        }
        console.log(`${fam} paged decode worst rel ${worst.toExponential(2)}`);
        expect(ids).toEqual(ref.greedy_ids);
        expect(worst).toBeLessThanOrEqual(1e-4);
        m.close();
      });
    }

    for (const fam of ["llama3", "qwen35"] as const) {
      test(`${fam}: one batched paged step of sequences at positions 20 and 25 matches full_logits rows`, () => {
        const dir = fixture("hf", fam);
        const ref = JSON.parse(fs.readFileSync(fixture("hf", fam, "reference.json"), "utf8")) as {
          prompt_ids: number[];
          greedy_ids: number[];
        };
        const full = openSafetensors(fixture("hf", fam, "reference.safetensors")).readF32Sync("full_logits");
        const m = LoadedModel.open(dir);
        const V = m.config.vocabSize;
        const all = [...ref.prompt_ids, ...ref.greedy_ids];
        const dec = (tokens: number) => ({ kind: "decode", context: CONTEXT, tokens, paged }) as const;
        let state: Readonly<Record<string, HostData>> = m.initialState(dec(20));
        state = m.step(dec(20), all.slice(0, 20), [0], state, slots([A], [0], 20)).state;
        state = m.step(dec(25), all.slice(0, 25), [0], state, slots([B], [0], 25)).state;
        const batched = { kind: "batched-decode", batch: 2, context: CONTEXT, paged } as const;
        const r = m.step(batched, [all[20]!, all[25]!], [20, 25], state, slots([A, B], [20, 25], 1));
        expect(relErr(r.logits.subarray(0, V), full.subarray(20 * V, 21 * V))).toBeLessThanOrEqual(1e-4);
        expect(relErr(r.logits.subarray(V), full.subarray(25 * V, 26 * V))).toBeLessThanOrEqual(1e-4);
        m.close();
      });
    }

    test("a page table naming a page outside the pool is an error, not a silent read", () => {
      const m = LoadedModel.open(fixture("hf", "llama3"));
      const kind = { kind: "decode", context: CONTEXT, tokens: 1, paged } as const;
      const bad = slots([{ pages: [24], lane: 0 }], [0], 1);
      bad.slot_map = [0];
      expect(() => m.step(kind, [1], [0], m.initialState(kind), bad)).toThrow(/outside \[0, 24\)/);
      expect(() => m.graph({ kind: "decode", context: CONTEXT, paged: { pageSize: 3, pages: 4, lanes: 1 } })).toThrow(
        TraceError,
      );
      m.close();
    });
  },
);

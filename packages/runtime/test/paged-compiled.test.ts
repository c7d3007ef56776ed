// The paged KV graphs of every HF fixture family compiled by graph-plan evaluate equal to the primitive
// graph (graph-ir's eval, the oracle) within 1e-6: a prefill chunk, single-token decode and a batched step of
// two sequences at different lengths, through scrambled page tables over a pool holding earlier tokens. The
// paged read must fold into Attention (no Gather of pages left), as on the contiguous path.
import * as fs from "node:fs";
import { evaluate, numel, type Graph, type HostData, type Tensor } from "@poot/graph-ir";
import { compile, defaultTarget } from "@poot/graph-plan";
import { LoadedModel, checkpointConsts, type GraphKind, type PagedLayout } from "@poot/models";
import { describe, expect, test } from "vitest";
import { fixture, needFixture } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("hf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

const FAMILIES = ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"] as const;
const CONTEXT = 32,
  PAGE = 4,
  PER = CONTEXT / PAGE;

function relDiff(a: Tensor, b: Tensor): number {
  let num = 0,
    den = 0;
  for (let i = 0; i < b.data.length; i++) {
    num = Math.max(num, Math.abs(a.data[i]! - b.data[i]!));
    den = Math.max(den, Math.abs(b.data[i]!));
  }
  return den === 0 ? num : num / den;
}

/** The value id of a graph's slot `key`, or -1. */
function slotOf(g: Graph, key: string): number {
  return g.values.findIndex((v) => v.storage.kind === "slot" && v.storage.key === key);
}

/** Deterministic pseudo-random floats in (-1, 1) (the pool's earlier contents). */
function noise(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = ((x >>> 0) / 4294967296) * 2 - 1;
  }
  return out;
}

describe.skipIf(FIXTURES === undefined)(
  `paged graphs: compiled == primitive (${FIXTURES === undefined ? NO_FIXTURES : "present"})`,
  () => {
    const paged: PagedLayout = { pageSize: PAGE, pages: 20, lanes: 3 };
    // Sequence pages, deliberately out of order; lanes 2 and 0.
    const seqs = [
      { pages: [13, 2, 17, 5, 0, 9, 11, 19], lane: 2 },
      { pages: [4, 15, 1, 8, 12, 3, 18, 6], lane: 0 },
    ];

    for (const fam of FAMILIES) {
      test(`${fam}: prefill chunk, decode and batched decode on cuda and wgpu within 1e-6; pages read inside Attention`, () => {
        const ref = JSON.parse(fs.readFileSync(fixture("hf", fam, "reference.json"), "utf8")) as {
          prompt_ids: number[];
        };
        const m = LoadedModel.open(fixture("hf", fam));
        try {
          const consts = checkpointConsts(m.checkpoint);
          const cases: {
            kind: GraphKind;
            ids: number[];
            pos: number[];
            rows: { seq: number; start: number; n: number }[];
          }[] = [
            {
              kind: { kind: "decode", context: CONTEXT, tokens: 8, paged },
              ids: ref.prompt_ids.slice(0, 8),
              pos: [6],
              rows: [{ seq: 0, start: 6, n: 8 }],
            },
            {
              kind: { kind: "decode", context: CONTEXT, tokens: 1, paged },
              ids: [ref.prompt_ids[3]!],
              pos: [13],
              rows: [{ seq: 1, start: 13, n: 1 }],
            },
            {
              kind: { kind: "batched-decode", batch: 2, context: CONTEXT, paged },
              ids: [ref.prompt_ids[1]!, ref.prompt_ids[2]!],
              pos: [9, 22],
              rows: [
                { seq: 0, start: 9, n: 1 },
                { seq: 1, start: 22, n: 1 },
              ],
            },
          ];
          for (const c of cases) {
            const g: Graph = m.graph(c.kind);
            const table: number[] = [],
              map: number[] = [];
            for (const r of c.rows) {
              const s = seqs[r.seq]!;
              table.push(...s.pages);
              for (let t = 0; t < r.n; t++)
                map.push(s.pages[Math.floor((r.start + t) / PAGE)]! * PAGE + ((r.start + t) % PAGE));
            }
            const slots: Record<string, Int32Array> = {
              ids: Int32Array.from(c.ids),
              pos: Int32Array.from(c.pos),
              page_table: Int32Array.from(table),
              slot_map: Int32Array.from(map),
            };
            if (slotOf(g, "state_lane") >= 0) slots.state_lane = Int32Array.from(c.rows.map((r) => seqs[r.seq]!.lane));
            const state: Record<string, HostData> = {};
            g.states.forEach((st, i) => {
              state[st.key] = noise(numel(g.values[st.input]!.shape), 7 + i);
            });
            const bind = { consts, slots, state };
            const want = evaluate(g, bind, { validate: false });
            for (const target of ["cuda", "wgpu"] as const) {
              const p = compile(g, defaultTarget(target), { mode: c.ids.length > c.pos.length ? "prefill" : "decode" });
              const attn = p.graph.eqns.filter((e) => e.op === "Attention");
              const layers = m.config.layerTypes.filter((t) => t !== "linear").length;
              expect(attn.length).toBe(layers);
              for (const e of attn) expect(e.params.pageSize).toBe(PAGE);
              const table = slotOf(p.graph, "page_table");
              expect(table).toBeGreaterThanOrEqual(0);
              expect(p.graph.eqns.some((e) => e.op === "Gather" && e.inputs.includes(table))).toBe(false);
              const got = evaluate(p.graph, bind, { ops: p.ops, validate: false });
              let worst = relDiff(got.outputs.logits!, want.outputs.logits!);
              for (const k of Object.keys(want.state)) worst = Math.max(worst, relDiff(got.state[k]!, want.state[k]!));
              expect(worst, `${fam} ${c.kind.kind} x${c.ids.length} on ${target}`).toBeLessThanOrEqual(1e-6);
            }
          }
        } finally {
          m.close();
        }
      });
    }
  },
);

// The sharded hand-built Llama evaluated rank by rank with graph-ir's float64 evaluator (the oracle), the collectives
// done here as their definitions say (all-reduce: sum in rank order; all-gather: concatenate), equals the whole
// graph's logits and KV state: with the default layout (all-reduces only) and with the LM head split by vocabulary
// (an all-gather of the logits). A planted dropped all-reduce breaks it.
import { evaluate, numel, type Graph, type HostData, type ValueType } from "@poot/graph-ir";
import { parseShardKey, shardGraph, type ShardedProgram, type ShardRule } from "@poot/graph-plan";
import { describe, expect, it } from "vitest";
import { buildLlama, TINY } from "./llama.js";
import { bindingsFor } from "./util.js";

const RULES: ShardRule[] = [
  { pattern: /\.(q|k|v|gate|up)$/, style: "column" },
  { pattern: /\.(o|down)$/, style: "row" },
];
const VOCAB: ShardRule[] = [...RULES, { pattern: /^embed$/, style: "column" }];

/** Rank `r`'s piece of a tensor of shape `shape` split on `axis`. */
function piece(data: ArrayLike<number>, shape: readonly number[], axis: number, r: number, n: number): Float64Array {
  const outer = numel(shape.slice(0, axis)),
    inner = numel(shape.slice(axis + 1));
  const len = (shape[axis]! / n) * inner;
  const out = new Float64Array(outer * len);
  for (let o = 0; o < outer; o++)
    for (let i = 0; i < len; i++) out[o * len + i] = data[o * shape[axis]! * inner + r * len + i]!;
  return out;
}

/** Runs one step of every rank's segments with evaluate; returns the logits and the whole state_out. */
function step(
  tp: ShardedProgram,
  b: ReturnType<typeof bindingsFor>,
  drop: number | null = null,
): { logits: ArrayLike<number>; state: Record<string, ArrayLike<number>> } {
  const n = tp.ranks;
  const specs = new Map(
    tp.source.values
      .filter((v) => v.storage.kind === "state")
      .map((v) => [(v.storage as { key: string }).key, v.shape]),
  );
  const consts =
    (r: number) =>
    (key: string, type: ValueType): HostData => {
      const s = parseShardKey(key);
      if (s === null) return b.consts[key]!;
      expect(s.rank).toBe(r);
      const whole = type.shape.map((d, i) => (i === s.axis ? d * n : d));
      return piece(b.consts[s.key]!, whole, s.axis, r, n);
    };
  const slots: Record<string, ArrayLike<number>>[] = Array.from({ length: n }, () => ({ ...b.slots }));
  const state: Record<string, ArrayLike<number>>[] = Array.from({ length: n }, (_, r) =>
    Object.fromEntries(
      Object.entries(b.state).map(([k, d]) => {
        const axis = tp.stateAxes.get(k) ?? null;
        return [k, axis === null ? d : piece(d, specs.get(k)!, axis, r, n)];
      }),
    ),
  );
  const outs: Record<string, ArrayLike<number>>[] = Array.from({ length: n }, () => ({}));
  tp.segments.forEach((seg, s) => {
    for (let r = 0; r < n; r++) {
      for (const inp of seg.inputs)
        slots[r]![inp.key] = inp.kind === "carry" ? outs[r]![inp.output]! : outs[r]![inp.key]!;
      const g: Graph = tp.graphs[r]![s]!;
      const res = evaluate(g, { consts: consts(r), slots: slots[r], state: state[r] });
      for (const [k, t] of Object.entries(res.outputs)) outs[r]![k] = t.data as ArrayLike<number>;
      for (const [k, t] of Object.entries(res.state)) state[r]![k] = t.data as ArrayLike<number>;
    }
    for (const c of tp.collectives.filter((x) => x.segment === s)) {
      const parts = outs.map((o) => o[c.output]!);
      const key = `tp.collective.${c.index}`;
      let result: ArrayLike<number>;
      if (c.kind === "all-gather") {
        const whole = new Float64Array(numel(c.shape));
        const len = parts[0]!.length / numel(c.shape.slice(0, c.axis!));
        parts.forEach((p, r) => {
          for (let o = 0; o < numel(c.shape.slice(0, c.axis!)); o++)
            for (let i = 0; i < len; i++) whole[o * len * n + r * len + i] = p[o * len + i]!;
        });
        result = whole;
      } else result = drop === c.index ? parts[0]! : parts.reduce((a, p) => Float64Array.from(a, (x, i) => x + p[i]!));
      for (let r = 0; r < n; r++) outs[r]![key] = result;
    }
  });
  const whole: Record<string, ArrayLike<number>> = {};
  for (const [k, axis] of tp.stateAxes) {
    if (axis === null) whole[k] = state[0]![k]!;
    else {
      const shape = specs.get(k)!;
      const out = new Float64Array(numel(shape));
      const parts = state.map((st) => st[k]!);
      const len = parts[0]!.length / numel(shape.slice(0, axis));
      for (let o = 0; o < numel(shape.slice(0, axis)); o++)
        parts.forEach((p, r) => {
          for (let i = 0; i < len; i++) out[o * len * n + r * len + i] = p[o * len + i]!;
        });
      whole[k] = out;
    }
  }
  return { logits: outs[0]![[...tp.outputs.keys()][0]!]!, state: whole };
}

function rel(a: ArrayLike<number>, ref: ArrayLike<number>): number {
  let d = 0,
    m = 0;
  for (let i = 0; i < ref.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - ref[i]!));
    m = Math.max(m, Math.abs(ref[i]!));
  }
  return d / m;
}

describe("sharded graphs evaluate like the whole graph", () => {
  const g = buildLlama(TINY);
  const b = bindingsFor(g, 7, { ids: [5], pos: [3] });
  const ref = evaluate(g, b);

  for (const [name, rules, gathers] of [
    ["heads and MLP split", RULES, 0],
    ["LM head split by vocabulary too", VOCAB, 1],
  ] as const) {
    it(`${name}: 2 ranks' logits and KV state equal the whole graph's`, () => {
      const tp = shardGraph(g, { ranks: 2, rules });
      expect(tp.collectivesPerStep()["all-gather"].count).toBe(gathers);
      const got = step(tp, b);
      expect(rel(got.logits, ref.outputs.logits!.data)).toBeLessThanOrEqual(1e-6);
      for (const [k, t] of Object.entries(ref.state)) expect(rel(got.state[k]!, t.data), k).toBeLessThanOrEqual(1e-6);
    });
  }

  it("planted: dropping an all-reduce moves the logits", () => {
    const tp = shardGraph(g, { ranks: 2, rules: RULES });
    expect(rel(step(tp, b, 1).logits, ref.outputs.logits!.data)).toBeGreaterThan(1e-3);
  });
});

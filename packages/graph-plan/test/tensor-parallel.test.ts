// The sharding pass on a hand-built Llama graph (test/llama.ts): Megatron splits give one all-reduce after each
// row-parallel projection, per-rank segment graphs that validate with local shapes and shard keys, KV caches split
// by heads; dimensions that do not divide are refused with one line naming the tensor or value and the numbers.
import { validateGraph } from "@poot/graph-ir";
import { PlanError, parseShardKey, shardGraph, shardKey, type ShardRule } from "@poot/graph-plan";
import { describe, expect, it } from "vitest";
import { buildLlama, TINY } from "./llama.js";

// test/llama.ts names its weights `layers.N.q` ... (not checkpoint names): its own rule table.
const RULES: ShardRule[] = [
  { pattern: /\.(q|k|v|gate|up)$/, style: "column" },
  { pattern: /\.(o|down)$/, style: "row" },
];

describe("shardGraph", () => {
  it("splits heads and MLP columns over 2 ranks with one all-reduce per row-parallel projection", () => {
    const tp = shardGraph(buildLlama(TINY), { ranks: 2, rules: RULES });
    expect(tp.collectivesPerStep()).toEqual({
      "all-reduce": { count: 2 * TINY.layers, bytes: 2 * TINY.layers * TINY.hidden * 4 },
      "all-gather": { count: 0, bytes: 0 },
    });
    expect(tp.segments).toHaveLength(2 * TINY.layers + 1);
    expect(tp.collectives.map((c) => c.name)).toEqual([
      "layers.0.attn_out",
      "layers.0.down",
      "layers.1.attn_out",
      "layers.1.down",
    ]);
    expect(tp.shards.map((s) => `${s.key}@${s.axis}`)).toContain("layers.0.o@1");
    expect(tp.stateAxes.get("layers.0.k_cache")).toBe(1);
    for (const [rank, segs] of tp.graphs.entries())
      for (const g of segs) {
        validateGraph(g);
        for (const v of g.values) {
          if (v.storage.kind !== "const") continue;
          const s = parseShardKey(v.storage.key);
          if (s !== null) expect(s.rank).toBe(rank);
        }
      }
    // The KV cache holds this rank's KV head only: [1, 2/2, maxSeq, D].
    const cache = tp.graphs[1]!.flat()
      .flatMap((g) => g.values)
      .find((v) => v.storage.kind === "state");
    expect(cache?.shape).toEqual([1, 1, TINY.maxSeq, TINY.headDim]);
    expect(tp.explain()).toMatch(/all-reduce per step: 4 \(512 bytes\)/);
  });

  it("at one rank is the graph itself: one segment, no collective, no shard", () => {
    const tp = shardGraph(buildLlama(TINY), { ranks: 1, rules: RULES });
    expect(tp.segments).toHaveLength(1);
    expect(tp.collectives).toHaveLength(0);
    expect(tp.graphs[0]![0]!.eqns.length).toBe(buildLlama(TINY).eqns.length);
  });

  it("refuses dimensions that do not divide, naming them (planted: 4 ranks over 2 KV heads, 3 over 32 rows)", () => {
    const four = () => shardGraph(buildLlama(TINY), { ranks: 4, rules: RULES });
    expect(four).toThrow(PlanError);
    expect(four).toThrow(
      /tp-indivisible.*layers\.0\.k \[1, 16\] is reshaped to \[1, 1, 2, 8\].*an axis of 2, which does not divide into 4 shards/,
    );
    expect(() => shardGraph(buildLlama(TINY), { ranks: 3, rules: RULES })).toThrow(
      /tensor "layers\.0\.q" \[32, 32\]: axis 0 \(32\) does not split into 3 shards/,
    );
    expect(() => shardGraph(buildLlama(TINY), { ranks: 0 })).toThrow(/ranks must be an integer >= 1/);
  });

  it("names shard keys reversibly", () => {
    const s = { key: "model.layers.3.mlp.down_proj.weight", axis: 1, rank: 2, ranks: 4 };
    expect(parseShardKey(shardKey(s))).toEqual(s);
    expect(parseShardKey("model.embed_tokens.weight")).toBeNull();
  });
});

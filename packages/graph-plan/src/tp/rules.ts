// Which checkpoint tensors tensor parallelism splits, and on which axis (Megatron-style, decision 2500): q/k/v and
// MLP gate/up are column-parallel (split by output rows), o_proj and down_proj row-parallel (split by input columns).

/** How a weight is split: `column` splits the output rows (axis -2 of [out, in]), `row` the input columns (-1). */
export type ShardStyle = "column" | "row";

/** One rule: checkpoint tensors whose name matches `pattern` are split in `style`. */
export interface ShardRule {
  /** Matched against the Const key (the checkpoint tensor name). */
  readonly pattern: RegExp;
  /** Column- or row-parallel. */
  readonly style: ShardStyle;
}

/**
 * The rule table (Hugging Face names; routed experts' per-expert tensors match the same suffixes). Everything
 * else (embedding, norms, router, LM head, Qwen3.5's delta-net projections) stays whole on every rank.
 */
export const SHARD_RULES: readonly ShardRule[] = [
  // ── attention: heads split across ranks ──
  { pattern: /\.self_attn\.[qkv]_proj\.(weight|bias)$/, style: "column" },
  { pattern: /\.self_attn\.o_proj\.weight$/, style: "row" },
  // ── MLP and each routed expert: intermediate columns split ──
  { pattern: /\.(gate_proj|up_proj|w1|w3)\.weight$/, style: "column" },
  { pattern: /\.(down_proj|w2)\.weight$/, style: "row" },
];

/** The style a Const key is split in, or null when it stays whole. */
export function shardStyle(key: string, rules: readonly ShardRule[] = SHARD_RULES): ShardStyle | null {
  for (const r of rules) if (r.pattern.test(key)) return r.style;
  return null;
}

/** The axis a weight of rank `rank` is split on in `style` (a bias, rank 1, is split on its only axis). */
export function shardAxis(style: ShardStyle, rank: number): number {
  if (rank === 1) return 0;
  return style === "column" ? rank - 2 : rank - 1;
}

/** Where one rank's piece of a checkpoint tensor comes from. */
export interface WeightShard {
  /** The checkpoint tensor name. */
  readonly key: string;
  /** The axis split. */
  readonly axis: number;
  /** This rank. */
  readonly rank: number;
  /** Ranks in the group. */
  readonly ranks: number;
}

/** The Const key of one rank's piece of `key` (what the rank's executor asks its weight source for). */
export function shardKey(s: WeightShard): string {
  return `${s.key}|tp${s.rank}of${s.ranks}@${s.axis}`;
}

/** Parses a key made by {@link shardKey}; null for a whole tensor's key. */
export function parseShardKey(key: string): WeightShard | null {
  const m = /^(.*)\|tp(\d+)of(\d+)@(\d+)$/.exec(key);
  if (m === null) return null;
  return { key: m[1]!, rank: Number(m[2]), ranks: Number(m[3]), axis: Number(m[4]) };
}

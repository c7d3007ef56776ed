// Tracing entry point: one decoder recipe per architecture (token mixer + channel mixer over the shared blocks)
// and the three graph kinds: stateless prefill, decode with KV/recurrent State at a Pos slot, batched decode.
import type { Graph } from "@poot/graph-ir";
import type { Architecture, LayerKind, ModelConfig } from "../config.js";
import { selfAttention } from "./attention.js";
import { TraceContext, type PagedLayout, type TraceShape } from "./context.js";
import { latentAttention } from "./mla.js";
import { routedExperts } from "./moe.js";
import { gatedDeltaNet } from "./qwen35.js";
import { decoder, gatedMlp, type DecoderParts } from "./transformer.js";
import type { ModelWeights } from "./weights.js";

/**
 * Which graph to trace. Every graph reads token ids from the Token slot `ids` (i32, sequence-major) and
 * writes `logits` f32 [B·T, V].
 * - `prefill`: T tokens at positions 0..T-1, no state (the logits of a whole prompt). With `output: "hidden"` it
 *   writes `hidden` f32 [T, D] instead: the final hidden state after the final norm, the LM head's input
 *   (what embeddings pool).
 * - `decode`: T (default 1) tokens of one sequence starting at the Pos slot `pos` (i32 [1]); the KV cache
 *   (`layers.N.k` / `.v`, f32 [1, Hkv, context, Dh]) and Qwen3.5's conv/recurrent states are State pairs.
 *   With T > 1 and pos 0 it is a prefill that fills the cache; with `logits: "last"` the final norm and the LM head
 *   run on the last token's row only and `logits` is [1, V].
 * - `batched-decode`: one token for each of B sequences at their own positions (`pos` i32 [B]).
 *
 * With `paged`, decode and batched-decode graphs keep the KV cache in a shared page pool read through the
 * `page_table` slot and written through `slot_map`, and recurrent states in lane pools (see {@link PagedLayout}).
 */
export type GraphKind =
  | { readonly kind: "prefill"; readonly tokens: number; readonly output?: "logits" | "hidden" }
  | {
      readonly kind: "decode";
      readonly context: number;
      readonly tokens?: number;
      readonly paged?: PagedLayout;
      /** `last`: `logits` holds only the last token's row [1, V] (a prefill chunk's next-token logits). Default `all`. */
      readonly logits?: "all" | "last";
    }
  | { readonly kind: "batched-decode"; readonly batch: number; readonly context: number; readonly paged?: PagedLayout };

const dense: DecoderParts = { mixer: selfAttention, mlp: gatedMlp };
const experts: DecoderParts = { mixer: selfAttention, mlp: routedExperts };
const latent: DecoderParts = { mixer: (ctx, x, layer) => latentAttention(ctx, x, layer), mlp: routedExperts };
const hybrid: DecoderParts = {
  mixer: (ctx, x, layer, kind: LayerKind) =>
    kind === "linear" ? gatedDeltaNet(ctx, x, layer) : selfAttention(ctx, x, layer, kind),
  mlp: gatedMlp,
};

/** The decoder recipe of each family; their differences beyond these parts are ModelConfig flags. */
export const FAMILY_PARTS: Readonly<Record<Architecture, DecoderParts>> = {
  llama: dense,
  mistral: dense,
  qwen2: dense,
  qwen3: dense,
  gemma2: dense,
  gemma3: dense,
  phi3: dense,
  mixtral: experts,
  olmoe: experts,
  qwen3moe: experts,
  qwen35: hybrid,
  granite: dense,
  smollm3: dense,
  gptoss: experts,
  deepseek2: latent,
};

/** The (batch, tokens, context) a graph kind computes. */
export function shapeOf(kind: GraphKind): TraceShape {
  switch (kind.kind) {
    case "prefill":
      return { batch: 1, tokens: kind.tokens, context: null };
    case "decode":
      return { batch: 1, tokens: kind.tokens ?? 1, context: kind.context, paged: kind.paged ?? null };
    case "batched-decode":
      return { batch: kind.batch, tokens: 1, context: kind.context, paged: kind.paged ?? null };
    default:
      return kind satisfies never;
  }
}

/** Traces a model into a primitive graph of the given kind; missing or mis-shaped tensors are TraceErrors. */
export function traceModel(config: ModelConfig, weights: ModelWeights, kind: GraphKind): Graph {
  const ctx = new TraceContext(config, weights, shapeOf(kind));
  const hidden = kind.kind === "prefill" && kind.output === "hidden";
  const lastRow = kind.kind === "decode" && kind.logits === "last";
  const out = decoder(ctx, FAMILY_PARTS[config.architecture], hidden ? "hidden" : "logits", lastRow);
  ctx.b.output(hidden ? "hidden" : "logits", out);
  return ctx.b.build();
}

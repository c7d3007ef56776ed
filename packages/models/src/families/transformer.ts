// Composable decoder blocks shared by every family: RMSNorm (plain or 1+w), linear layers (dense or packed),
// gated MLPs, embedding and LM head, and the decoder loop that families parameterize with their token mixers.
import type { Ref } from "@poot/graph-ir";
import type { LayerKind } from "../config.js";
import { TraceError } from "../errors.js";
import type { TraceContext } from "./context.js";

/** RMSNorm over the last axis with weight `name`; `plusOne` multiplies by (1 + w) (Gemma, Qwen3.5). */
export function rmsNorm(ctx: TraceContext, x: Ref, name: string, plusOne: boolean, eps = ctx.config.rmsNormEps): Ref {
  const b = ctx.b;
  const d = x.shape[x.shape.length - 1]!;
  const w = ctx.weight(name, [d]);
  const weight = plusOne ? b.add(b.f32(w), 1) : w;
  return b.rmsNorm(x, weight, eps);
}

/**
 * x [N, K] @ W^T for an [out, K] weight (dense or packed) plus an optional bias; `rows` gathers weight rows first.
 * A weight stored with reordered input columns (GPTQ act-order, `inputOrder`) gets x gathered along K in that order,
 * a constant permutation, so its groups stay contiguous 32-blocks. An FP8 weight opened with static activation
 * scales (`inputScale`) or dynamic groups (`inputGroup`, decision 2610) gets x quantized to e4m3 first.
 */
export function linear(ctx: TraceContext, x: Ref, name: string, bias?: string, rows?: Ref): Ref {
  const b = ctx.b;
  const k = x.shape[x.shape.length - 1]!;
  let w = ctx.weight(name, [null, k], true);
  if (rows !== undefined) w = b.gather(w, rows, 0);
  const { inputOrder: order, inputScale, inputGroup } = ctx.weights.spec(name);
  if (inputScale !== undefined) x = ctx.inputsQuantized(x, inputScale);
  if (inputGroup !== undefined) x = ctx.inputsQuantized(x, { group: inputGroup });
  if (order !== undefined) x = ctx.inputsInOrder(x, order, name);
  return b.linear(x, w, bias === undefined ? undefined : ctx.weight(bias, [w.shape[0]!]));
}

/** The MLP activation of the config (SiLU or tanh-GELU). */
export function activation(ctx: TraceContext, x: Ref): Ref {
  const act = ctx.config.hiddenAct;
  switch (act) {
    case "silu":
      return ctx.b.silu(x);
    case "gelu_tanh":
      return ctx.b.gelu(x, "tanh");
    default:
      return act satisfies never;
  }
}

/** Gated MLP: down(act(gate(x)) · up(x)); Phi-3 stores gate and up fused in one [2F, D] weight. */
export function gatedMlp(ctx: TraceContext, x: Ref, layer: number): Ref {
  const b = ctx.b,
    w = ctx.weights;
  let gate: Ref, up: Ref;
  if (ctx.config.fusedQKV) {
    const gu = linear(ctx, x, w.layerName(layer, "gateUp"));
    const f = gu.shape[1]! / 2;
    gate = b.slice(gu, [0, 0], [ctx.rows, f]);
    up = b.slice(gu, [0, f], [ctx.rows, 2 * f]);
  } else {
    gate = linear(ctx, x, w.layerName(layer, "gate"));
    up = linear(ctx, x, w.layerName(layer, "up"));
  }
  return linear(ctx, b.mul(activation(ctx, gate), up), w.layerName(layer, "down"));
}

/** Token embeddings [N, D] as f32, scaled by `embeddingScale` where the family does (Gemma: √D). */
export function embed(ctx: TraceContext): Ref {
  const b = ctx.b,
    cfg = ctx.config;
  const table = ctx.weight(ctx.weights.globalName("embed"), [cfg.vocabSize, cfg.hiddenSize]);
  const x = b.embedding(table, ctx.ids);
  return cfg.embeddingScale === null ? x : b.mul(x, cfg.embeddingScale);
}

/** The final norm of the residual stream, [N, D] -> [N, D]: the LM head's input. */
export function finalNorm(ctx: TraceContext, h: Ref): Ref {
  return rmsNorm(ctx, h, ctx.weights.globalName("finalNorm"), ctx.config.normPlusOne);
}

/** Final norm and LM head (tied to the embedding when the checkpoint has no head), Gemma 2 final soft-cap. */
export function lmHead(ctx: TraceContext, h: Ref): Ref {
  const b = ctx.b,
    cfg = ctx.config,
    w = ctx.weights;
  const x = finalNorm(ctx, h);
  const head = w.has(w.globalName("lmHead")) ? w.globalName("lmHead") : w.globalName("embed");
  let logits = linear(ctx, x, head);
  if (cfg.finalLogitSoftcap !== null)
    logits = b.mul(b.tanh(b.div(logits, cfg.finalLogitSoftcap)), cfg.finalLogitSoftcap);
  if (cfg.logitsDivisor !== null) logits = b.div(logits, cfg.logitsDivisor);
  return logits;
}

/** A token mixer: attention or linear attention of one layer, [N, D] -> [N, D]. */
export type Mixer = (ctx: TraceContext, x: Ref, layer: number, kind: LayerKind) => Ref;
/** A channel mixer: dense MLP or routed experts, [N, D] -> [N, D]. */
export type ChannelMixer = (ctx: TraceContext, x: Ref, layer: number) => Ref;

/** What a family plugs into the shared decoder. */
export interface DecoderParts {
  /** Token mixer of each layer kind. */
  readonly mixer: Mixer;
  /** Channel mixer (MLP or MoE). */
  readonly mlp: ChannelMixer;
}

/**
 * Pre-norm decoder: embed, per layer x + mixer(norm(x)) and x + mlp(norm(x)) (Gemma adds post-norms, Granite scales
 * both branches by its residual multiplier), head. With `output` "hidden" it stops before the head: the residual
 * stream after the final norm, [N, D]. With `lastRow` the final norm and head run on the last row only ([1, ·]).
 */
export function decoder(
  ctx: TraceContext,
  parts: DecoderParts,
  output: "logits" | "hidden" = "logits",
  lastRow = false,
): Ref {
  const cfg = ctx.config,
    w = ctx.weights,
    b = ctx.b;
  if (cfg.layerTypes.length !== cfg.numLayers)
    throw new TraceError("bad-config", `${cfg.layerTypes.length} layer types for ${cfg.numLayers} layers`);
  // The residual stream at each layer boundary is named (`embed.out`, `layers.N.out`): @poot/runtime cuts the
  // graph into blocks there (and checks that nothing else crosses).
  let h = b.name(embed(ctx), "embed.out");
  for (let i = 0; i < cfg.numLayers; i++) {
    const kind = cfg.layerTypes[i]!;
    h = b.scope(`layers.${i}`, () => {
      let a = parts.mixer(ctx, rmsNorm(ctx, h, w.layerName(i, "attnNorm"), cfg.normPlusOne), i, kind);
      if (cfg.postNorms) a = rmsNorm(ctx, a, w.layerName(i, "postAttnNorm"), cfg.normPlusOne);
      if (cfg.residualScale !== null) a = b.mul(a, cfg.residualScale);
      const h1 = b.add(h, a);
      // HF names the pre-MLP norm post_attention_layernorm except in Gemma, whose post-norms take that name.
      const ffnNorm = w.naming === "hf" && !cfg.postNorms ? w.layerName(i, "postAttnNorm") : w.layerName(i, "ffnNorm");
      let m = parts.mlp(ctx, rmsNorm(ctx, h1, ffnNorm, cfg.normPlusOne), i);
      if (cfg.postNorms) m = rmsNorm(ctx, m, w.layerName(i, "postFfnNorm"), cfg.normPlusOne);
      if (cfg.residualScale !== null) m = b.mul(m, cfg.residualScale);
      return b.add(h1, m, "out");
    });
  }
  // Only the last row's logits are read after a prefill chunk: the head (a GEMM over the vocabulary) runs on it alone.
  const [N, D] = h.shape as [number, number];
  if (lastRow && N > 1) h = b.slice(h, [N - 1, 0], [N, D]);
  return output === "hidden" ? finalNorm(ctx, h) : lmHead(ctx, h);
}

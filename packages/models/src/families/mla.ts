// DeepSeek-V2 multi-head latent attention as primitives, in the weight-absorbed form: the cache holds, per token,
// the normalized KV latent (kv_lora_rank) joined with the shared RoPE key (qk_rope_head_dim), and the per-head key
// and value up-projections are folded into the query and the output instead of being applied to every cached row.
// The attention itself is then plain multi-query attention (one KV head, H query heads) over the latent rows.
import type { Ref } from "@poot/graph-ir";
import { TraceError } from "../errors.js";
import { applyRope, attentionMask, ropeTables, updateCache, updatePagedCache } from "./attention.js";
import type { TraceContext } from "./context.js";
import { linear, rmsNorm } from "./transformer.js";

/** DeepseekV2RMSNorm of the latent is built with its default eps, not the config's rms_norm_eps. */
const LATENT_NORM_EPS = 1e-6;

/**
 * [..., r] with RoPE pairs interleaved (x0, y0, x1, y1, ...) -> [..., r] as (x0, x1, ..., y0, y1, ...), so the
 * rotate-half RoPE applies. Queries and keys are permuted alike, so their dot products are unchanged.
 */
function deinterleave(ctx: TraceContext, x: Ref): Ref {
  const b = ctx.b;
  const s = x.shape;
  const r = s[s.length - 1]!;
  const lead = s.slice(0, -1);
  const pairs = b.reshape(x, [...lead, r / 2, 2]);
  const perm = [...lead.map((_, i) => i), lead.length + 1, lead.length];
  return b.reshape(b.transpose(pairs, perm), [...lead, r]);
}

/** Multi-head latent attention of one layer, [N, D] -> [N, D]. */
export function latentAttention(ctx: TraceContext, x: Ref, layer: number): Ref {
  const b = ctx.b,
    cfg = ctx.config,
    w = ctx.weights;
  const mla = cfg.mla;
  if (mla === null)
    throw new TraceError("bad-config", "latent attention needs an MLA config", { value: cfg.architecture });
  if (w.naming !== "hf")
    throw new TraceError("bad-weight", "DeepSeek MLA is read from Hugging Face safetensors only", { file: w.file });
  const { batch: B, tokens: T } = ctx.shape;
  const H = cfg.numHeads,
    N = ctx.rows;
  const { kvLoraRank: R, qkNopeHeadDim: dn, qkRopeHeadDim: dr, vHeadDim: dv } = mla;
  const name = (role: Parameters<typeof w.layerName>[1]) => w.layerName(layer, role);

  // Queries [B, H, T, dn + dr]: the no-RoPE part and the RoPE part.
  const q = b.transpose(b.reshape(linear(ctx, x, name("q")), [B, T, H, dn + dr]), [0, 2, 1, 3]);
  const qNope = b.slice(q, [0, 0, 0, 0], [B, H, T, dn]);
  let qRope = deinterleave(ctx, b.slice(q, [0, 0, 0, dn], [B, H, T, dn + dr]));

  // The compressed KV [N, R + dr]: the latent (normalized) and the RoPE key shared by every head.
  const kvA = linear(ctx, x, name("kvA"));
  const latent = rmsNorm(ctx, b.slice(kvA, [0, 0], [N, R]), name("kvANorm"), false, LATENT_NORM_EPS);
  let kRope = deinterleave(ctx, b.transpose(b.reshape(b.slice(kvA, [0, R], [N, R + dr]), [B, T, 1, dr]), [0, 2, 1, 3]));
  const tables = ropeTables(ctx, cfg.rope, "rope");
  qRope = applyRope(ctx, qRope, tables, dr);
  kRope = applyRope(ctx, kRope, tables, dr);

  // Cache rows: keys [latent | RoPE key] and values [latent], one head each.
  const latentHeads = b.transpose(b.reshape(latent, [B, T, 1, R]), [0, 2, 1, 3]);
  let kh = b.concat([latentHeads, kRope], -1);
  let vh = latentHeads;
  if (ctx.paged !== null) {
    kh = updatePagedCache(ctx, `layers.${layer}.k`, kh);
    vh = updatePagedCache(ctx, `layers.${layer}.v`, vh);
  } else if (ctx.shape.context !== null) {
    kh = updateCache(ctx, `layers.${layer}.k`, kh);
    vh = updateCache(ctx, `layers.${layer}.v`, vh);
  }

  // kv_b_proj [H·(dn + dv), R] per head: rows 0..dn up-project keys, dn..dn+dv values.
  const kvB = b.reshape(b.f32(ctx.weight(name("kvB"), [H * (dn + dv), R])), [H, dn + dv, R]);
  const wk = b.broadcast(b.reshape(b.slice(kvB, [0, 0, 0], [H, dn, R]), [1, H, dn, R]), [B, H, dn, R]);
  const wv = b.broadcast(b.reshape(b.transpose(b.slice(kvB, [0, dn, 0], [H, dn + dv, R]), [0, 2, 1]), [1, H, R, dv]), [
    B,
    H,
    R,
    dv,
  ]);
  const query = b.concat([b.matmul(qNope, wk), qRope], -1);

  const keys = kh.shape[2]!;
  const mask = attentionMask(ctx, keys, null);
  const kr = b.repeatKv(kh, H, 1),
    vr = b.repeatKv(vh, H, 1);
  const scores = b.mul(b.matmul(query, b.transpose(kr, [0, 1, 3, 2])), Math.pow(dn + dr, -0.5));
  const probs = b.softmax(b.select(mask, scores, -Infinity), -1);
  const out = b.matmul(b.matmul(probs, vr), wv);
  return linear(ctx, b.reshape(b.transpose(out, [0, 2, 1, 3]), [N, H * dv]), name("o"));
}

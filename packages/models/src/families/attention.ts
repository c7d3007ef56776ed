// Softmax attention as primitives: RoPE tables from the Pos slot (rotate-half, partial, llama3/linear scaling,
// GGUF rope_freqs), causal and sliding-window masks, the KV cache as State written with DynamicUpdateSlice, GQA.
import type { Ref } from "@poot/graph-ir";
import type { LayerKind, RopeConfig } from "../config.js";
import { TraceError } from "../errors.js";
import type { TraceContext } from "./context.js";
import { linear, rmsNorm } from "./transformer.js";

/** Inverse RoPE frequencies (rotaryDim/2 of them) with HF's llama3 / linear scaling applied, computed in float64. */
export function inverseFrequencies(rope: RopeConfig): Float32Array {
  const dim = rope.rotaryDim;
  const out = new Float32Array(dim / 2);
  const s = rope.scaling;
  for (let i = 0; i < dim / 2; i++) {
    let f = 1 / Math.pow(rope.theta, (2 * i) / dim);
    if (s !== null) {
      switch (s.type) {
        case "linear":
          f /= s.factor;
          break;
        case "llama3": {
          const wavelen = (2 * Math.PI) / f;
          const lowWl = s.originalMaxPositions / s.lowFreqFactor,
            highWl = s.originalMaxPositions / s.highFreqFactor;
          if (wavelen > lowWl) f /= s.factor;
          else if (wavelen >= highWl) {
            const smooth = (s.originalMaxPositions / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
            f = ((1 - smooth) * f) / s.factor + smooth * f;
          }
          break;
        }
        case "longrope":
          // The short/long choice depends on the sequence length at run time: see ropeTables.
          throw new TraceError("bad-config", "longrope frequencies come in two sets; use longropeFrequencies", {
            value: "longrope",
          });
        case "yarn": {
          // HF's _compute_yarn_parameters: a linear ramp between the correction dims of beta_fast and beta_slow
          // moves each frequency from extrapolation (unchanged) to interpolation (÷ factor).
          const corr = (rot: number) =>
            (dim * Math.log(s.originalMaxPositions / (rot * 2 * Math.PI))) / (2 * Math.log(rope.theta));
          let low = corr(s.betaFast),
            high = corr(s.betaSlow);
          if (s.truncate) {
            low = Math.floor(low);
            high = Math.ceil(high);
          }
          low = Math.max(low, 0);
          high = Math.min(high, dim - 1);
          if (low === high) high += 0.001;
          const ramp = Math.min(Math.max((i - low) / (high - low), 0), 1);
          const extrapolation = 1 - ramp;
          f = (f / s.factor) * (1 - extrapolation) + f * extrapolation;
          break;
        }
        default:
          s satisfies never;
      }
    }
    out[i] = f;
  }
  return out;
}

/** LongRoPE (Phi-3) inverse frequencies 1 / (factor_i · θ^(2i/d)) of the short or long factor set. */
export function longropeFrequencies(rope: RopeConfig, set: "short" | "long"): Float32Array {
  const s = rope.scaling;
  if (s?.type !== "longrope") throw new TraceError("bad-config", "not a longrope config", { value: s?.type });
  const factors = set === "short" ? s.shortFactor : s.longFactor;
  const dim = rope.rotaryDim;
  if (factors.length !== dim / 2)
    throw new TraceError(
      "bad-config",
      `longrope ${set}_factor has ${factors.length} entries for ${dim / 2} frequencies`,
      { key: `${set}_factor`, value: factors.length },
    );
  return Float32Array.from(factors, (f, i) => 1 / (f * Math.pow(rope.theta, (2 * i) / dim)));
}

/**
 * Inverse frequencies as a graph value broadcastable to [B, T, rotaryDim/2]. LongRoPE picks, per sequence,
 * the long factors once the sequence (last new position + 1) exceeds the original context, as HF does.
 */
function frequencies(ctx: TraceContext, rope: RopeConfig, key: string): Ref {
  const b = ctx.b;
  const half = rope.rotaryDim / 2;
  const s = rope.scaling;
  if (s?.type !== "longrope") return b.computed("f32", [half], inverseFrequencies(rope), `${key}.inv_freq`);
  const { batch: B, tokens: T } = ctx.shape;
  const short = b.computed("f32", [half], longropeFrequencies(rope, "short"), `${key}.inv_freq_short`);
  const long = b.computed("f32", [half], longropeFrequencies(rope, "long"), `${key}.inv_freq_long`);
  const last = b.slice(ctx.positions, [0, T - 1], [B, T]);
  const isLong = b.reshape(b.cmp("Ge", last, s.originalMaxPositions), [B, 1, 1]);
  return b.select(isLong, long, short);
}

/** LongRoPE's cos/sin scale √(1 + ln f / ln L₀) with f = maxPositions / L₀ (HF's default when no attention_factor is set). */
function ropeScale(ctx: TraceContext, rope: RopeConfig): number {
  const s = rope.scaling;
  if (s?.type === "yarn") return s.attentionFactor;
  if (s?.type !== "longrope") return 1;
  const factor = ctx.config.maxPositions / s.originalMaxPositions;
  return factor <= 1 ? 1 : Math.sqrt(1 + Math.log(factor) / Math.log(s.originalMaxPositions));
}

/**
 * Pairing of RoPE's rotated elements: `half` pairs j with j + rotaryDim/2 (HF rotate_half); `interleaved` pairs
 * 2i with 2i+1 (llama.cpp's "normal" mode, the order a GGUF `llama` checkpoint's Q/K rows are stored in).
 */
export type RopeStyle = "half" | "interleaved";

/**
 * cos/sin [B, 1, T, rotaryDim] of the new tokens' positions for one RoPE config (memoized per config and style):
 * frequency i sits at elements i and i + rotaryDim/2 (`half`) or 2i and 2i+1 (`interleaved`).
 */
export function ropeTables(
  ctx: TraceContext,
  rope: RopeConfig,
  key: string,
  style: RopeStyle = "half",
): { cos: Ref; sin: Ref } {
  const b = ctx.b;
  const memoKey = style === "half" ? key : `${key}.interleaved`;
  const cached = ctx.memo.get(`${memoKey}.cos`);
  if (cached !== undefined) return { cos: cached, sin: ctx.memo.get(`${memoKey}.sin`)! };
  const { batch: B, tokens: T } = ctx.shape;
  const half = rope.rotaryDim / 2;
  let inv = frequencies(ctx, rope, key);
  const ropeFreqs = ctx.config.ropeFreqsTensor;
  // GGUF llama3 models store the scaling as per-frequency divisors instead of in the config.
  if (ropeFreqs !== null) inv = b.div(inv, b.f32(ctx.weight(ropeFreqs, [half])));
  const angle = b.mul(b.reshape(b.cast(ctx.positions, "f32"), [B, T, 1]), inv);
  const emb =
    style === "half"
      ? b.reshape(b.concat([angle, angle], -1), [B, 1, T, rope.rotaryDim])
      : b.reshape(b.broadcast(b.reshape(angle, [B, T, half, 1]), [B, T, half, 2]), [B, 1, T, rope.rotaryDim]);
  let cos = b.unary("Cos", emb, `${key}.cos`),
    sin = b.unary("Sin", emb, `${key}.sin`);
  const scale = ropeScale(ctx, rope);
  if (scale !== 1) {
    cos = b.mul(cos, scale);
    sin = b.mul(sin, scale);
  }
  ctx.memo.set(`${memoKey}.cos`, cos);
  ctx.memo.set(`${memoKey}.sin`, sin);
  return { cos, sin };
}

/** RoPE (tables of the same style) on the first rotaryDim dims of x [B, H, T, Dh]; the rest passes through. */
export function applyRope(
  ctx: TraceContext,
  x: Ref,
  t: { cos: Ref; sin: Ref },
  rotaryDim: number,
  style: RopeStyle = "half",
): Ref {
  const b = ctx.b;
  const [B, H, T, D] = x.shape as [number, number, number, number];
  const rope = (y: Ref) => (style === "half" ? b.ropeRotateHalf(y, t.cos, t.sin) : b.ropeInterleaved(y, t.cos, t.sin));
  if (rotaryDim === D) return rope(x);
  const rot = rope(b.slice(x, [0, 0, 0, 0], [B, H, T, rotaryDim]));
  return b.concat([rot, b.slice(x, [0, 0, 0, rotaryDim], [B, H, T, D])], -1);
}

/** Bool [B, 1, T, Skv]: key j is visible to the token at position p when j <= p (and j > p - window). */
export function attentionMask(ctx: TraceContext, keys: number, window: number | null): Ref {
  const key = `mask.${window ?? "causal"}`;
  const hit = ctx.memo.get(key);
  if (hit !== undefined) return hit;
  const b = ctx.b;
  const { batch: B, tokens: T } = ctx.shape;
  const j = b.iota([1, 1, 1, keys], 3, "i32");
  const p = b.reshape(ctx.positions, [B, 1, T, 1]);
  let m = b.cmp("Le", j, p);
  if (window !== null) m = b.bit("And", m, b.cmp("Gt", j, b.sub(p, window)));
  ctx.memo.set(key, m);
  return m;
}

/** Writes k/v [B, Hkv, T, Dh] into the layer's cache State [B, Hkv, S, Dh] at each sequence's Pos; returns the new cache. */
export function updateCache(ctx: TraceContext, key: string, x: Ref): Ref {
  const b = ctx.b;
  const { batch: B, context: S } = ctx.shape;
  const [, Hkv, , D] = x.shape as [number, number, number, number];
  // The state key is global; its debug name is scoped by the enclosing layer like every other value.
  const cache = b.name(b.state(key, "f32", [B, Hkv, S!, D]), key.slice(key.lastIndexOf(".") + 1));
  let next = cache;
  for (let s = 0; s < B; s++) {
    const row = B === 1 ? x : b.slice(x, [s, 0, 0, 0], [s + 1, ...x.shape.slice(1)]);
    const start = b.reshape(b.slice(ctx.pos!, [s], [s + 1]), []);
    next = b.dynamicUpdateSlice(next, row, [ctx.i32(s), ctx.i32(0), start, ctx.i32(0)]);
  }
  b.setState(cache, next);
  return next;
}

/**
 * Paged KV: writes k/v [B, Hkv, T, Dh] row by row into the layer's pool State [pages·pageSize, Hkv, Dh] at the
 * rows the SlotMap names, and returns the sequences' keys/values gathered page by page through the page
 * table, [B, Hkv, pagesPerSequence·pageSize, Dh] (logical position j at index j, so the causal mask applies
 * as is). The pool is declared as rows so the writes are DynamicUpdateSlices of the State itself, the form
 * every backend already updates in place; the page view is a reshape.
 */
export function updatePagedCache(ctx: TraceContext, key: string, x: Ref): Ref {
  const b = ctx.b;
  const { pageSize, pages: P } = ctx.paged!;
  const { batch: B, tokens: T } = ctx.shape;
  const [, Hkv, , D] = x.shape as [number, number, number, number];
  const pool = b.name(b.state(key, "f32", [P * pageSize, Hkv, D]), key.slice(key.lastIndexOf(".") + 1));
  // Token-major rows [B·T, Hkv, Dh]: one token's keys for every head are contiguous in a page.
  const rows = b.reshape(b.transpose(x, [0, 2, 1, 3]), [B * T, Hkv, D]);
  let next = pool;
  for (let r = 0; r < B * T; r++) {
    const row = B * T === 1 ? rows : b.slice(rows, [r, 0, 0], [r + 1, Hkv, D]);
    const at = b.reshape(b.slice(ctx.slotMap!, [r], [r + 1]), []);
    next = b.dynamicUpdateSlice(next, row, [at, ctx.i32(0), ctx.i32(0)]);
  }
  b.setState(pool, next);
  const perSeq = ctx.pageTable!.shape[1]!;
  const pagesView = b.reshape(next, [P, pageSize, Hkv, D]);
  const seq = b.reshape(b.gather(pagesView, ctx.pageTable!, 0), [B, perSeq * pageSize, Hkv, D]);
  return b.transpose(seq, [0, 2, 1, 3]);
}

/** Row permutation undoing llama.cpp's Q/K interleave (GGUF `llama` arch) so the HF rotate-half RoPE applies. */
function unpermuteRows(ctx: TraceContext, heads: number, headDim: number): Ref {
  const idx = new Int32Array(heads * headDim);
  const half = headDim / 2;
  for (let h = 0; h < heads; h++)
    for (let s = 0; s < 2; s++)
      for (let j = 0; j < half; j++) idx[h * headDim + s * half + j] = h * headDim + 2 * j + s;
  return ctx.b.computed("i32", [heads * headDim], idx, `unpermute${heads}`);
}

/** [N, H·Dh] -> [B, H, T, Dh]. */
function toHeads(ctx: TraceContext, x: Ref, heads: number, headDim: number): Ref {
  const { batch: B, tokens: T } = ctx.shape;
  return ctx.b.transpose(ctx.b.reshape(x, [B, T, heads, headDim]), [0, 2, 1, 3]);
}

/** Self-attention of one layer (GQA, q/k norm, RoPE, sliding window, soft-cap, Qwen3.5 output gate), [N, D] -> [N, D]. */
export function selfAttention(ctx: TraceContext, x: Ref, layer: number, kind: LayerKind): Ref {
  const b = ctx.b,
    cfg = ctx.config,
    w = ctx.weights;
  const H = cfg.numHeads,
    Hkv = cfg.numKVHeads,
    Dh = cfg.headDim,
    N = ctx.rows;
  const { batch: B, tokens: T } = ctx.shape;
  const permuted = w.naming === "gguf" && cfg.sourceArchitecture === "llama";
  // llama.cpp's converter interleaves each head's rotary halves over the whole head (decision 1690): with full
  // rotary dims, RoPE on adjacent pairs over the stored order gives q·k exactly (both permuted alike), so the
  // rows stay as stored. A partial rotary head, or per-element Q/K norm weights in HF order, still gathers the
  // rows back into HF order.
  const pairs =
    permuted &&
    !cfg.fusedQKV &&
    !cfg.qkNorm &&
    cfg.rope.rotaryDim === Dh &&
    (cfg.ropeLocal === null || cfg.ropeLocal.rotaryDim === Dh);
  const rows = (heads: number) => (permuted && !pairs ? unpermuteRows(ctx, heads, Dh) : undefined);
  const style: RopeStyle = pairs ? "interleaved" : "half";
  let q: Ref, k: Ref, v: Ref;
  if (cfg.fusedQKV) {
    const qkv = linear(ctx, x, w.layerName(layer, "qkv"));
    q = b.slice(qkv, [0, 0], [N, H * Dh]);
    k = b.slice(qkv, [0, H * Dh], [N, (H + Hkv) * Dh]);
    v = b.slice(qkv, [0, (H + Hkv) * Dh], [N, (H + 2 * Hkv) * Dh]);
  } else {
    const bias = (role: "qBias" | "kBias" | "vBias") =>
      cfg.attentionBias && w.has(w.layerName(layer, role)) ? w.layerName(layer, role) : undefined;
    q = linear(ctx, x, w.layerName(layer, "q"), bias("qBias"), rows(H));
    k = linear(ctx, x, w.layerName(layer, "k"), bias("kBias"), rows(Hkv));
    v = linear(ctx, x, w.layerName(layer, "v"), bias("vBias"));
  }
  let gate: Ref | null = null;
  if (cfg.attnOutputGate) {
    // Qwen3.5: q_proj yields [q | gate] per head.
    const qg = b.reshape(q, [N, H, 2 * Dh]);
    q = b.reshape(b.slice(qg, [0, 0, 0], [N, H, Dh]), [N, H * Dh]);
    gate = b.reshape(b.slice(qg, [0, 0, Dh], [N, H, 2 * Dh]), [N, H * Dh]);
  }
  if (cfg.qkNorm) {
    const qn = w.layerName(layer, "qNorm"),
      kn = w.layerName(layer, "kNorm");
    // Per-head norms have a [Dh] weight; OLMoE normalizes the whole projection.
    const perHead = w.spec(qn).shape[0] === Dh;
    q = perHead
      ? b.reshape(rmsNorm(ctx, b.reshape(q, [N, H, Dh]), qn, cfg.normPlusOne), [N, H * Dh])
      : rmsNorm(ctx, q, qn, cfg.normPlusOne);
    k = perHead
      ? b.reshape(rmsNorm(ctx, b.reshape(k, [N, Hkv, Dh]), kn, cfg.normPlusOne), [N, Hkv * Dh])
      : rmsNorm(ctx, k, kn, cfg.normPlusOne);
  }
  let qh = toHeads(ctx, q, H, Dh);
  let kh = toHeads(ctx, k, Hkv, Dh);
  // SmolLM3's NoPE layers skip RoPE altogether.
  if (cfg.layerRope[layer] !== false) {
    const rope = kind === "sliding" && cfg.ropeLocal !== null ? cfg.ropeLocal : cfg.rope;
    const tables = ropeTables(ctx, rope, kind === "sliding" && cfg.ropeLocal !== null ? "rope_local" : "rope", style);
    qh = applyRope(ctx, qh, tables, rope.rotaryDim, style);
    kh = applyRope(ctx, kh, tables, rope.rotaryDim, style);
  }
  let vh = toHeads(ctx, v, Hkv, Dh);
  if (ctx.paged !== null) {
    kh = updatePagedCache(ctx, `layers.${layer}.k`, kh);
    vh = updatePagedCache(ctx, `layers.${layer}.v`, vh);
  } else if (ctx.shape.context !== null) {
    kh = updateCache(ctx, `layers.${layer}.k`, kh);
    vh = updateCache(ctx, `layers.${layer}.v`, vh);
  }
  const keys = kh.shape[2]!;
  const mask = attentionMask(ctx, keys, kind === "sliding" ? cfg.slidingWindow : null);
  const kr = b.repeatKv(kh, H / Hkv, 1),
    vr = b.repeatKv(vh, H / Hkv, 1);
  let scores = b.mul(
    b.matmul(qh, b.transpose(kr, [0, 1, 3, 2])),
    cfg.attentionScale ?? Math.pow(cfg.queryPreAttnScalar, -0.5),
  );
  if (cfg.attnLogitSoftcap !== null) scores = b.mul(b.tanh(b.div(scores, cfg.attnLogitSoftcap)), cfg.attnLogitSoftcap);
  const masked = b.select(mask, scores, -Infinity);
  const probs = cfg.attentionSinks ? softmaxWithSink(ctx, masked, layer) : b.softmax(masked, -1);
  const out = b.reshape(b.transpose(b.matmul(probs, vr), [0, 2, 1, 3]), [B * T, H * Dh]);
  const gated = gate === null ? out : b.mul(out, sigmoid(ctx, gate));
  const oBias = cfg.attentionBias && w.has(w.layerName(layer, "oBias")) ? w.layerName(layer, "oBias") : undefined;
  return linear(ctx, gated, w.layerName(layer, "o"), oBias);
}

/**
 * gpt-oss attention sinks: each head's learned logit joins the softmax over the keys as one more column whose
 * probability is then dropped (so the kept probabilities sum to less than 1), scores [B, H, T, S].
 */
function softmaxWithSink(ctx: TraceContext, scores: Ref, layer: number): Ref {
  const b = ctx.b;
  const [B, H, T, S] = scores.shape as [number, number, number, number];
  const sinks = b.f32(ctx.weight(ctx.weights.layerName(layer, "sinks"), [H]));
  const column = b.broadcast(b.reshape(sinks, [1, H, 1, 1]), [B, H, T, 1]);
  const probs = b.softmax(b.concat([scores, column], -1), -1);
  return b.slice(probs, [0, 0, 0, 0], [B, H, T, S]);
}

/** 1 / (1 + e^-x). */
export function sigmoid(ctx: TraceContext, x: Ref): Ref {
  const b = ctx.b;
  return b.recip(b.add(b.exp(b.neg(b.f32(x))), 1));
}

// Routed experts (Mixtral, OLMoE, Qwen3-MoE, gpt-oss, DeepSeek-V2) as primitives: softmax router, top-k by k rounds
// of ArgMax and masking, a dense gate vector zero outside the top-k, and every expert computed as one batched MatMul.
import { isPacked, type Ref } from "@poot/graph-ir";
import { TraceError } from "../errors.js";
import { sigmoid } from "./attention.js";
import type { TraceContext } from "./context.js";
import { activation, gatedMlp, linear } from "./transformer.js";
import type { ExpertRole } from "./weights.js";

/**
 * Dense gates [N, E] zero outside the top-k experts (first index wins ties): `softmax-topk` keeps softmax(router)
 * there (renormalized if asked), `topk-softmax` takes the softmax of the top-k router logits alone (gpt-oss).
 */
export function topKGates(
  ctx: TraceContext,
  logits: Ref,
  topK: number,
  renormalize: boolean,
  routing: "softmax-topk" | "topk-softmax" = "softmax-topk",
): Ref {
  const b = ctx.b;
  const [N, E] = logits.shape as [number, number];
  const probs = routing === "softmax-topk" ? b.softmax(logits, -1) : logits;
  const experts = b.iota([N, E], 1, "i32");
  let left = probs;
  let chosen: Ref | null = null;
  for (let r = 0; r < topK; r++) {
    const hit = b.cmp("Eq", experts, b.argmax(left, 1, true));
    chosen = chosen === null ? hit : b.bit("Or", chosen, hit);
    left = b.select(hit, -Infinity, left);
  }
  if (routing === "topk-softmax") return b.softmax(b.select(chosen!, logits, -Infinity), -1);
  const gates = b.select(chosen!, probs, 0);
  return renormalize ? b.div(gates, b.sum(gates, [1], true)) : gates;
}

/** All experts' weights of one role as [E, out, in]: GGUF stores them stacked, HF one tensor per expert. */
function stacked(
  ctx: TraceContext,
  layer: number,
  role: ExpertRole,
  hfPrefix: string,
  hfNames: Record<ExpertRole, string>,
): Ref {
  const b = ctx.b,
    w = ctx.weights,
    moe = ctx.config.moe!;
  if (w.naming === "gguf") {
    const t = ctx.weight(w.ggufExpertName(layer, role), [moe.numExperts, null, null]);
    return isPacked(t.dtype) ? b.decodePacked(t) : b.f32(t);
  }
  // transformers 5 may save experts fused: gate_up_proj [E, 2F, D] (gate rows first) and down_proj [E, D, F].
  const fusedBase = `model.layers.${layer}.${hfPrefix}`;
  if (w.has(`${fusedBase}.gate_up_proj`)) {
    if (role === "down") return b.f32(ctx.weight(`${fusedBase}.down_proj`, [moe.numExperts, null, null]));
    const gu = b.f32(ctx.weight(`${fusedBase}.gate_up_proj`, [moe.numExperts, null, null]));
    const [E, F2, D] = gu.shape as [number, number, number];
    return role === "gate" ? b.slice(gu, [0, 0, 0], [E, F2 / 2, D]) : b.slice(gu, [0, F2 / 2, 0], [E, F2, D]);
  }
  const parts: Ref[] = [];
  for (let e = 0; e < moe.numExperts; e++) {
    const t = b.f32(ctx.weight(`model.layers.${layer}.${hfPrefix}.${e}.${hfNames[role]}.weight`));
    parts.push(b.reshape(t, [1, ...t.shape]));
  }
  return b.concat(parts, 0);
}

/** Expert weight names under an HF layer: OLMoE/Qwen3-MoE `mlp.experts.E.gate_proj`, Mixtral `block_sparse_moe.experts.E.w1`. */
function hfLayout(arch: string): { router: string; prefix: string; names: Record<ExpertRole, string> } {
  if (arch === "mixtral")
    return {
      router: "block_sparse_moe.gate.weight",
      prefix: "block_sparse_moe.experts",
      names: { gate: "w1", up: "w3", down: "w2" },
    };
  return {
    router: arch === "gptoss" ? "mlp.router.weight" : "mlp.gate.weight",
    prefix: "mlp.experts",
    names: { gate: "gate_proj", up: "up_proj", down: "down_proj" },
  };
}

/**
 * gpt-oss experts: gate_up_proj [E, D, 2F] (x @ W, gate and up interleaved column by column) and down_proj
 * [E, F, D], both with biases; out = (clamp(up, ±limit) + 1) · g · sigmoid(alpha · g), g = min(gate, limit).
 */
function clampedSwigluExperts(ctx: TraceContext, x: Ref, layer: number, gates: Ref): Ref {
  const b = ctx.b,
    cfg = ctx.config,
    moe = cfg.moe!;
  const { alpha, limit } = moe.clampedSwiglu!;
  const N = ctx.rows,
    E = moe.numExperts,
    D = cfg.hiddenSize,
    F = moe.expertIntermediateSize;
  if (ctx.weights.naming !== "hf")
    throw new TraceError("bad-weight", "gpt-oss experts are read from Hugging Face safetensors only", {
      file: ctx.weights.file,
    });
  const p = `model.layers.${layer}.mlp.experts`;
  const wgu = b.reshape(b.f32(ctx.weight(`${p}.gate_up_proj`, [E, D, 2 * F])), [E, D, F, 2]);
  const bgu = b.reshape(b.f32(ctx.weight(`${p}.gate_up_proj_bias`, [E, 2 * F])), [E, 1, F, 2]);
  const half = (t: Ref, i: number, lead: number) =>
    b.reshape(b.slice(t, [0, 0, 0, i], [E, lead, F, i + 1]), [E, lead, F]);
  const xe = b.broadcast(b.reshape(x, [1, N, D]), [E, N, D]);
  const gate = b.min(b.add(b.matmul(xe, half(wgu, 0, D)), half(bgu, 0, 1)), limit);
  const up = b.max(b.min(b.add(b.matmul(xe, half(wgu, 1, D)), half(bgu, 1, 1)), limit), -limit);
  const glu = b.mul(gate, sigmoid(ctx, b.mul(gate, alpha)));
  const down = b.f32(ctx.weight(`${p}.down_proj`, [E, F, D]));
  const downBias = b.reshape(b.f32(ctx.weight(`${p}.down_proj_bias`, [E, D])), [E, 1, D]);
  const y = b.add(b.matmul(b.mul(b.add(up, 1), glu), down), downBias);
  return b.sum(b.mul(y, b.reshape(b.transpose(gates, [1, 0]), [E, N, 1])), [0]);
}

/**
 * Routed-experts MLP of one layer, [N, D] -> [N, D]: Σ_e gate[n, e] · down_e(act(gate_e(x)) · up_e(x)), times the
 * routed scale, plus DeepSeek's shared expert; DeepSeek's first dense layers are a plain gated MLP.
 */
export function routedExperts(ctx: TraceContext, x: Ref, layer: number): Ref {
  const b = ctx.b,
    cfg = ctx.config,
    w = ctx.weights;
  const moe = cfg.moe;
  if (moe === null) throw new TraceError("bad-config", "routed experts need a MoE config", { value: cfg.architecture });
  if (layer < moe.firstDenseLayers) return gatedMlp(ctx, x, layer);
  const hf = hfLayout(cfg.architecture);
  const router = w.naming === "hf" ? `model.layers.${layer}.${hf.router}` : w.layerName(layer, "router");
  const routerBias =
    w.naming === "hf" && cfg.architecture === "gptoss" ? `model.layers.${layer}.mlp.router.bias` : undefined;
  const gates = topKGates(ctx, linear(ctx, x, router, routerBias), moe.topK, moe.normTopKProb, moe.routing);
  let y = moe.clampedSwiglu !== null ? clampedSwigluExperts(ctx, x, layer, gates) : expertSum(ctx, x, layer, gates, hf);
  // Scaling the weighted sum rather than the gates keeps the gate a plain top-k Select, which compile fuses.
  if (moe.routedScale !== 1) y = b.mul(y, moe.routedScale);
  if (moe.sharedIntermediateSize > 0) {
    const p = `model.layers.${layer}.mlp.shared_experts`;
    const shared = linear(
      ctx,
      b.mul(activation(ctx, linear(ctx, x, `${p}.gate_proj.weight`)), linear(ctx, x, `${p}.up_proj.weight`)),
      `${p}.down_proj.weight`,
    );
    y = b.add(y, shared);
  }
  return y;
}

/** Σ_e gates[:, e] · down_e(act(gate_e(x)) · up_e(x)) over stacked expert weights. */
function expertSum(ctx: TraceContext, x: Ref, layer: number, gates: Ref, hf: ReturnType<typeof hfLayout>): Ref {
  const b = ctx.b,
    cfg = ctx.config;
  const N = ctx.rows,
    E = cfg.moe!.numExperts,
    D = cfg.hiddenSize;
  const wg = stacked(ctx, layer, "gate", hf.prefix, hf.names),
    wu = stacked(ctx, layer, "up", hf.prefix, hf.names);
  const wd = stacked(ctx, layer, "down", hf.prefix, hf.names);
  const xe = b.broadcast(b.reshape(x, [1, N, D]), [E, N, D]);
  const g = b.matmul(xe, b.transpose(wg, [0, 2, 1]));
  const u = b.matmul(xe, b.transpose(wu, [0, 2, 1]));
  const y = b.matmul(b.mul(activation(ctx, g), u), b.transpose(wd, [0, 2, 1]));
  const weighted = b.mul(y, b.reshape(b.transpose(gates, [1, 0]), [E, N, 1]));
  return b.sum(weighted, [0]);
}

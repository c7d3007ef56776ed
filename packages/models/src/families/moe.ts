// Routed experts (Mixtral, OLMoE, Qwen3-MoE) as primitives: softmax router, top-k by k rounds of ArgMax and
// masking, a dense gate vector zero outside the top-k, and every expert computed as one batched MatMul.
import { isPacked, type Ref } from "@poot/graph-ir";
import { TraceError } from "../errors.js";
import type { TraceContext } from "./context.js";
import { activation, linear } from "./transformer.js";
import type { ExpertRole } from "./weights.js";

/** Dense gates [N, E]: softmax(router) kept at the top-k experts (first index wins ties), else 0; renormalized if asked. */
export function topKGates(ctx: TraceContext, logits: Ref, topK: number, renormalize: boolean): Ref {
  const b = ctx.b;
  const [N, E] = logits.shape as [number, number];
  const probs = b.softmax(logits, -1);
  const experts = b.iota([N, E], 1, "i32");
  let left = probs;
  let chosen: Ref | null = null;
  for (let r = 0; r < topK; r++) {
    const hit = b.cmp("Eq", experts, b.argmax(left, 1, true));
    chosen = chosen === null ? hit : b.bit("Or", chosen, hit);
    left = b.select(hit, -Infinity, left);
  }
  const gates = b.select(chosen!, probs, 0);
  return renormalize ? b.div(gates, b.sum(gates, [1], true)) : gates;
}

/** All experts' weights of one role as [E, out, in]: GGUF stores them stacked, HF one tensor per expert. */
function stacked(ctx: TraceContext, layer: number, role: ExpertRole, hfPrefix: string, hfNames: Record<ExpertRole, string>): Ref {
  const b = ctx.b, w = ctx.weights, moe = ctx.config.moe!;
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
  return arch === "mixtral"
    ? { router: "block_sparse_moe.gate.weight", prefix: "block_sparse_moe.experts", names: { gate: "w1", up: "w3", down: "w2" } }
    : { router: "mlp.gate.weight", prefix: "mlp.experts", names: { gate: "gate_proj", up: "up_proj", down: "down_proj" } };
}

/** Routed-experts MLP of one layer, [N, D] -> [N, D]: Σ_e gate[n, e] · down_e(act(gate_e(x)) · up_e(x)). */
export function routedExperts(ctx: TraceContext, x: Ref, layer: number): Ref {
  const b = ctx.b, cfg = ctx.config, w = ctx.weights;
  const moe = cfg.moe;
  if (moe === null) throw new TraceError("bad-config", "routed experts need a MoE config", { value: cfg.architecture });
  const N = ctx.rows, E = moe.numExperts, D = cfg.hiddenSize;
  const hf = hfLayout(cfg.architecture);
  const router = w.naming === "hf" ? `model.layers.${layer}.${hf.router}` : w.layerName(layer, "router");
  const gates = topKGates(ctx, linear(ctx, x, router), moe.topK, moe.normTopKProb);
  const wg = stacked(ctx, layer, "gate", hf.prefix, hf.names), wu = stacked(ctx, layer, "up", hf.prefix, hf.names);
  const wd = stacked(ctx, layer, "down", hf.prefix, hf.names);
  const xe = b.broadcast(b.reshape(x, [1, N, D]), [E, N, D]);
  const g = b.matmul(xe, b.transpose(wg, [0, 2, 1]));
  const u = b.matmul(xe, b.transpose(wu, [0, 2, 1]));
  const y = b.matmul(b.mul(activation(ctx, g), u), b.transpose(wd, [0, 2, 1]));
  const weighted = b.mul(y, b.reshape(b.transpose(gates, [1, 0]), [E, N, 1]));
  return b.sum(weighted, [0]);
}

// Shape-only weights for compiling from a bare config.json: the tensor directory a Hugging Face
// checkpoint of that config would have (names, dtype, shapes), with no data behind it.
import { ModelWeights, type ModelConfig, type TensorInfo } from "@poot/models";
import { CliError } from "../errors.js";

/** The HF tensor directory of `cfg` (dense, routed-expert and post-norm families); bytes are absent. */
export function configWeights(cfg: ModelConfig, dtype: "F32" | "BF16", file: string): ModelWeights {
  // Families whose tensors this directory does not describe (fused, latent, gpt-oss experts) need their folder.
  if (
    cfg.linearAttention !== null ||
    cfg.fusedQKV ||
    cfg.mla !== null ||
    cfg.attentionSinks ||
    (cfg.moe !== null &&
      (cfg.moe.clampedSwiglu !== null || cfg.moe.sharedIntermediateSize > 0 || cfg.moe.firstDenseLayers > 0))
  ) {
    throw new CliError(
      "bad-input",
      `compiling ${cfg.architecture} from config.json alone is not supported; give the model folder`,
      { command: "compile", file },
    );
  }
  const D = cfg.hiddenSize,
    Dh = cfg.headDim,
    H = cfg.numHeads,
    KV = cfg.numKVHeads;
  const shapes: [string, number[]][] = [
    ["model.embed_tokens.weight", [cfg.vocabSize, D]],
    ["model.norm.weight", [D]],
  ];
  if (!cfg.tieWordEmbeddings) shapes.push(["lm_head.weight", [cfg.vocabSize, D]]);
  for (let i = 0; i < cfg.numLayers; i++) {
    const p = `model.layers.${i}.`;
    shapes.push(
      [`${p}input_layernorm.weight`, [D]],
      [`${p}post_attention_layernorm.weight`, [D]],
      [`${p}self_attn.q_proj.weight`, [H * Dh, D]],
      [`${p}self_attn.k_proj.weight`, [KV * Dh, D]],
      [`${p}self_attn.v_proj.weight`, [KV * Dh, D]],
      [`${p}self_attn.o_proj.weight`, [D, H * Dh]],
    );
    if (cfg.attentionBias)
      shapes.push(
        [`${p}self_attn.q_proj.bias`, [H * Dh]],
        [`${p}self_attn.k_proj.bias`, [KV * Dh]],
        [`${p}self_attn.v_proj.bias`, [KV * Dh]],
      );
    if (cfg.qkNorm) shapes.push([`${p}self_attn.q_norm.weight`, [Dh]], [`${p}self_attn.k_norm.weight`, [Dh]]);
    if (cfg.postNorms)
      shapes.push([`${p}pre_feedforward_layernorm.weight`, [D]], [`${p}post_feedforward_layernorm.weight`, [D]]);
    if (cfg.moe === null) {
      const F = cfg.intermediateSize;
      shapes.push(
        [`${p}mlp.gate_proj.weight`, [F, D]],
        [`${p}mlp.up_proj.weight`, [F, D]],
        [`${p}mlp.down_proj.weight`, [D, F]],
      );
    } else {
      const F = cfg.moe.expertIntermediateSize;
      shapes.push([`${p}mlp.gate.weight`, [cfg.moe.numExperts, D]]);
      for (let e = 0; e < cfg.moe.numExperts; e++) {
        shapes.push(
          [`${p}mlp.experts.${e}.gate_proj.weight`, [F, D]],
          [`${p}mlp.experts.${e}.up_proj.weight`, [F, D]],
          [`${p}mlp.experts.${e}.down_proj.weight`, [D, F]],
        );
      }
    }
  }
  const tensors = new Map(
    shapes.map(([name, shape]): [string, TensorInfo] => [
      name,
      { name, dtype, shape, byteOffset: 0, byteLength: 0, file: "none" },
    ]),
  );
  return new ModelWeights(tensors, "hf", file);
}

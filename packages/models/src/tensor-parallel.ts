// Tensor parallelism's demands on a config (decision 2500): the dimensions a Megatron-style split divides by the
// ranks, checked before any graph is traced so a refusal names the config dimension and the numbers.
import type { ModelConfig } from "./config.js";
import { ConfigError } from "./errors.js";

/** The config dimensions tensor parallelism splits (config.json names), with their sizes. */
export function tensorParallelDimensions(
  config: ModelConfig,
): readonly { readonly name: string; readonly size: number }[] {
  const dims: { name: string; size: number }[] = [];
  const moe = config.moe;
  if (config.layerTypes.some((k) => k !== "linear")) {
    dims.push({ name: "num_attention_heads", size: config.numHeads });
    dims.push({ name: "num_key_value_heads", size: config.numKVHeads });
  }
  if (moe === null || moe.firstDenseLayers > 0) dims.push({ name: "intermediate_size", size: config.intermediateSize });
  if (moe !== null) dims.push({ name: "moe_intermediate_size", size: moe.expertIntermediateSize });
  return dims;
}

/**
 * Throws a `bad-config` ConfigError naming the first dimension that does not divide by `ranks` (heads, KV heads,
 * intermediate sizes); returns quietly when tensor parallelism over `ranks` can split the model.
 */
export function checkTensorParallel(config: ModelConfig, ranks: number): void {
  for (const d of tensorParallelDimensions(config))
    if (d.size % ranks !== 0)
      throw new ConfigError(
        "bad-config",
        `tensor parallelism over ${ranks} ranks: ${d.name} (${d.size}) does not divide by ${ranks}`,
        { key: d.name, value: d.size },
      );
}

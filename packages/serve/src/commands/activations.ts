// The `--activations` option (decision 2610) of every command that runs a model: one definition, so `run`,
// `generate`, `logits`, `compile`, `bench` and `serve` spell, default, document and check it alike.
import type { ActivationNumerics } from "@poot/models";
import { Option } from "commander";
import { CliError } from "../errors.js";

/** The values `--activations` takes. */
export const ACTIVATION_NUMERICS: readonly ActivationNumerics[] = ["f32", "fp8-static", "fp8-dynamic"];

/** The `--activations` flag's help. */
export const ACTIVATIONS_HELP =
  "FP8 HF folders: f32 (activations stay f32), fp8-static (the checkpoint's input_scale applied, as vLLM runs it) or fp8-dynamic (a scale per token or weight_block_size[1] group, as transformers runs dynamic checkpoints)";

/** A fresh `--activations <numerics>` option (default f32) for `command.addOption`. */
export function activationsOption(): Option {
  return new Option("--activations <numerics>", ACTIVATIONS_HELP).default("f32");
}

/** Parses `--activations` (absent: f32); `flag` names it in the error (e.g. `serve.json: models[0].activations`). */
export function parseActivations(
  text: string | undefined,
  command: string,
  flag = "--activations",
): ActivationNumerics {
  if (text === undefined) return "f32";
  const found = ACTIVATION_NUMERICS.find((a) => a === text);
  if (found !== undefined) return found;
  throw new CliError("bad-input", `${flag} must be f32, fp8-static or fp8-dynamic, got "${text}"`, { command });
}

/** The `--numerics` flag's help (decision 2320). */
export const NUMERICS_HELP =
  "CPU backend: exact (default: f32 products of decoded weights) | fast (Q8_0/Q4_K/Q6_K GEMVs on 8-bit activations with integer dot products, as llama.cpp; AVX-512 VNNI, or a slower AVX2 fallback); absent, POOT_CPU_NUMERICS is read";

/**
 * A fresh `--numerics <kind>` option for `command.addOption`, shared by `run`, `generate`, `bench` and `serve`. It
 * has no default value, so that an unset flag leaves `POOT_CPU_NUMERICS` in force (exact when neither is set).
 */
export function numericsOption(): Option {
  return new Option("--numerics <kind>", NUMERICS_HELP);
}

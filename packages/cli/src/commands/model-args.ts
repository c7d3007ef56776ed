// Shared plumbing of the model commands (logits, generate, tokenize, chat-template): the MODEL argument,
// --ids / --backend / --weights parsing, and @poot/models errors turned into CliErrors that name the file.
import { LoadedModel, ModelError, type ActivationNumerics } from "@poot/models";
import { CliError } from "../errors.js";
import { EXECUTORS } from "./backends.js";

/** Backends a model command can run on: the reference evaluator and every executor backend. */
export const BACKENDS: readonly string[] = Object.keys(EXECUTORS);

/** Options every forward command takes. */
export interface ForwardOptions {
  readonly backend: string;
  readonly weights: string;
  readonly activations?: string;
}

/** The `--activations` flag's help (decision 2610). */
export const ACTIVATIONS_HELP =
  "FP8 HF folders: f32 (activations stay f32), fp8-static (the checkpoint's input_scale applied, as vLLM runs it) or fp8-dynamic (a scale per token or weight_block_size[1] group, as transformers runs dynamic checkpoints)";

/** Parses `--activations` (default f32). */
export function parseActivations(text: string | undefined, command: string): ActivationNumerics {
  if (text === undefined || text === "f32" || text === "fp8-static" || text === "fp8-dynamic") return text ?? "f32";
  throw new CliError("bad-input", `--activations must be f32, fp8-static or fp8-dynamic, got "${text}"`, { command });
}

/** Parses `1,2,3` into token ids. */
export function parseIds(text: string, command: string): number[] {
  const parts = text.split(",").map((s) => s.trim());
  const ids = parts.map(Number);
  if (parts.some((p) => p === "") || ids.some((n) => !Number.isSafeInteger(n) || n < 0)) {
    throw new CliError("bad-input", `--ids must be comma-separated non-negative integers, got "${text}"`, { command });
  }
  return ids;
}

/** Runs `fn`, turning bad-input errors of @poot/models into CliErrors (exit 1) that name the file. */
export function withModelErrors<T>(command: string, model: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof ModelError) {
      const code = err.code === "io" ? "file-unreadable" : "bad-input";
      throw new CliError(code, err.message, { command, file: err.file ?? model });
    }
    throw err;
  }
}

/** Opens MODEL for a forward command after checking --backend and --weights. */
export function openForForward(command: string, model: string, options: ForwardOptions): LoadedModel {
  if (!BACKENDS.includes(options.backend)) {
    throw new CliError("bad-input", `unknown backend "${options.backend}" (available: ${BACKENDS.join(", ")})`, {
      command,
    });
  }
  if (options.weights !== "f32" && options.weights !== "bf16") {
    throw new CliError("bad-input", `--weights must be f32 or bf16, got "${options.weights}"`, { command });
  }
  const weights = options.weights;
  const activations = parseActivations(options.activations, command);
  return withModelErrors(command, model, () => LoadedModel.open(model, { weights, activations }));
}

// Shared plumbing of the model commands (logits, generate, tokenize, chat-template): the MODEL argument,
// --ids / --backend / --weights / --target parsing, and @poot/models and planner errors turned into CliErrors that
// name the file.
import { LoadedModel, ModelError, type ActivationNumerics } from "@poot/models";
import {
  BACKEND_KINDS,
  PlanError,
  compile,
  type BackendKind,
  type CompileOptions,
  type Program,
  type Target,
} from "@poot/graph-plan";
import type { Graph } from "@poot/graph-ir";
import { parseActivations } from "@poot/serve";
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

/** `--target` (with --compiled) as a graph-plan backend kind, or a CliError naming the kinds. */
export function checkTarget(target: string, command: string): BackendKind {
  if (!(BACKEND_KINDS as readonly string[]).includes(target))
    throw new CliError("bad-input", `--target must be one of ${BACKEND_KINDS.join(", ")}, got "${target}"`, {
      command,
    });
  return target as BackendKind;
}

/** The flags of a forward command that may run compiled programs (`logits`, `generate`). */
export type CompiledForwardOptions = ForwardOptions & { readonly ids: string; compiled?: boolean; target: string };

/**
 * A forward command's `--ids`, `--weights`, `--activations` and (with --compiled) `--target`, checked without side
 * effects (each bad value a one-line CliError); returns the prompt ids.
 */
export function checkForwardFlags(command: string, o: CompiledForwardOptions): number[] {
  const ids = parseIds(o.ids, command);
  forwardFlags(command, o);
  if (o.compiled === true) checkTarget(o.target, command);
  return ids;
}

/** graph-plan's compile of `g` for `target`, with planner refusals as one-line CliErrors naming the model file. */
export function compileForCommand(
  g: Graph,
  target: Target,
  mode: NonNullable<CompileOptions["mode"]>,
  command: string,
  model: string,
): Program {
  try {
    return compile(g, target, { mode });
  } catch (err) {
    if (err instanceof PlanError) throw new CliError("command-failed", err.message, { command, file: model });
    throw err;
  }
}

/** A forward command's `--weights` and `--activations`, checked (each bad value a one-line CliError). */
export function forwardFlags(
  command: string,
  options: Omit<ForwardOptions, "backend">,
): { readonly weights: "f32" | "bf16"; readonly activations: ActivationNumerics } {
  if (options.weights !== "f32" && options.weights !== "bf16") {
    throw new CliError("bad-input", `--weights must be f32 or bf16, got "${options.weights}"`, { command });
  }
  return { weights: options.weights, activations: parseActivations(options.activations, command) };
}

/** Opens MODEL for a forward command after checking --backend, --weights and --activations. */
export function openForForward(command: string, model: string, options: ForwardOptions): LoadedModel {
  if (!BACKENDS.includes(options.backend)) {
    throw new CliError("bad-input", `unknown backend "${options.backend}" (available: ${BACKENDS.join(", ")})`, {
      command,
    });
  }
  const { weights, activations } = forwardFlags(command, options);
  return withModelErrors(command, model, () => LoadedModel.open(model, { weights, activations }));
}

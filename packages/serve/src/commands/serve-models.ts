// The models `poot serve` serves (decision 2705): from its arguments or a `--config` file, each with its id,
// aliases, own options (the flags as defaults) and the weight-file bytes it is charged under `--models-memory`.
import * as fs from "node:fs";
import * as path from "node:path";
import { RuntimeError, parseSize } from "@poot/runtime";
import { CliError } from "../errors.js";
import { parseActivations } from "./activations.js";
import { readServeConfig, type ServeConfigModel } from "./serve-config.js";
import type { ModelSettings } from "./serve-load.js";

const command = "serve";

/** One model's options before checking (numbers already parsed), named by `name(flag)` in errors. */
export interface RawModelOptions {
  readonly backend: string;
  readonly ctx?: number;
  readonly pageSize?: number;
  readonly kvPages?: number;
  readonly weights: string;
  /** `--activations` (absent: f32). */
  readonly activations?: string;
  /** A chat template file to read. */
  readonly chatTemplate?: string;
  readonly maxBatch: number;
  readonly prefixCache: boolean;
}

/** One model to serve. */
export interface ModelEntry {
  /** The model folder or .gguf file. */
  readonly path: string;
  /** The id clients name. */
  readonly id: string;
  /** Other names routed to it. */
  readonly aliases: readonly string[];
  /** Its checked options. */
  readonly settings: ModelSettings;
  /** Most sequences in one decode step. */
  readonly maxBatch: number;
  /** The bytes of its weight files (what loading it reads): what it is charged under the budget. */
  readonly bytes: number;
}

/** Checks one model's options (`name` spells a field as the user wrote it: `--ctx` or `serve.json: models[1].ctx`). */
export function settingsOf(raw: RawModelOptions, name: (flag: string) => string): ModelSettings {
  const { ctx: context, pageSize, kvPages } = raw;
  if (pageSize !== undefined && (pageSize & (pageSize - 1)) !== 0)
    throw new CliError("bad-input", `${name("page-size")} must be a power of two, got ${pageSize}`, { command });
  if (raw.weights !== "f32" && raw.weights !== "bf16")
    throw new CliError("bad-input", `${name("weights")} must be f32 or bf16, got "${raw.weights}"`, { command });
  const activations = parseActivations(raw.activations, command, name("activations"));
  let chatTemplate: string | undefined;
  if (raw.chatTemplate !== undefined) {
    try {
      chatTemplate = fs.readFileSync(raw.chatTemplate, "utf8");
    } catch (err) {
      throw new CliError("file-unreadable", `cannot read ${raw.chatTemplate}: ${(err as Error).message}`, {
        command,
        file: raw.chatTemplate,
      });
    }
  }
  // Prefill chunks stay within the context (the runtime stages one program per power-of-two chunk).
  const prefillChunk = context === undefined ? undefined : 2 ** Math.min(6, Math.floor(Math.log2(context)));
  return {
    backend: raw.backend,
    // The KV pool holds --max-batch full contexts unless --kv-pages says otherwise; requests beyond it wait.
    load: {
      weights: raw.weights,
      activations,
      maxSequences: raw.maxBatch,
      prefixCache: raw.prefixCache,
      ...(context === undefined ? {} : { context, prefillChunk }),
      ...(pageSize === undefined ? {} : { pageSize }),
      ...(kvPages === undefined ? {} : { kvPages }),
    },
    ...(chatTemplate === undefined ? {} : { chatTemplate }),
  };
}

/**
 * The bytes of the weight files loading `model` reads: a .gguf (or .safetensors) file, or a folder's
 * model.bf16.safetensors (`weights` bf16), its shards (model.safetensors.index.json) or model.safetensors.
 */
export function weightFileBytes(model: string, weights: "f32" | "bf16"): number {
  try {
    let files: string[];
    if (!fs.statSync(model).isDirectory()) files = [model];
    else {
      const index = path.join(model, "model.safetensors.index.json");
      if (weights === "bf16") files = [path.join(model, "model.bf16.safetensors")];
      else if (fs.existsSync(index)) {
        const map = (JSON.parse(fs.readFileSync(index, "utf8")) as { weight_map: Record<string, string> }).weight_map;
        files = [...new Set(Object.values(map))].map((f) => path.join(model, f));
      } else files = [path.join(model, "model.safetensors")];
    }
    return files.reduce((n, f) => n + fs.statSync(f).size, 0);
  } catch (err) {
    throw new CliError("file-unreadable", `cannot read the weights of ${model}: ${(err as Error).message}`, {
      command,
      file: model,
    });
  }
}

/** `--models-memory` (or the config's) in bytes; a one-line error naming where it came from. */
function budgetOf(text: string | undefined, where: string): number | null {
  if (text === undefined) return null;
  try {
    return parseSize(text, where);
  } catch (err) {
    if (err instanceof RuntimeError) throw new CliError("bad-input", err.message, { command });
    throw err;
  }
}

/** Bytes as the user reads them (`1.5 GiB`). */
export function formatBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) [n, i] = [n / 1024, i + 1];
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

/** The config entry's options over the flags' defaults. */
function overConfig(defaults: RawModelOptions, m: ServeConfigModel): RawModelOptions {
  const pick = <T>(v: T | undefined, d: T | undefined): T | undefined => v ?? d;
  const chatTemplate = pick(m["chat-template"], defaults.chatTemplate);
  const ctx = pick(m.ctx, defaults.ctx);
  const pageSize = pick(m["page-size"], defaults.pageSize);
  const kvPages = pick(m["kv-pages"], defaults.kvPages);
  return {
    backend: m.backend ?? defaults.backend,
    weights: m.weights ?? defaults.weights,
    ...((m.activations ?? defaults.activations) === undefined
      ? {}
      : { activations: m.activations ?? defaults.activations }),
    maxBatch: m["max-batch"] ?? defaults.maxBatch,
    prefixCache: m["prefix-cache"] ?? defaults.prefixCache,
    ...(ctx === undefined ? {} : { ctx }),
    ...(pageSize === undefined ? {} : { pageSize }),
    ...(kvPages === undefined ? {} : { kvPages }),
    ...(chatTemplate === undefined ? {} : { chatTemplate }),
  };
}

/**
 * The models to serve: MODEL arguments (each with the flags' options; `modelName` names a single one) or the
 * `config` file's entries (the flags as defaults), each checked and sized; a model whose weights exceed the
 * budget by themselves is refused here, before anything loads.
 */
export function modelEntries(
  models: readonly string[],
  flags: { readonly config?: string; readonly modelsMemory?: string; readonly modelName?: string },
  defaults: RawModelOptions,
): { readonly entries: ModelEntry[]; readonly memoryBytes: number | null } {
  if (flags.config !== undefined && models.length > 0)
    throw new CliError("bad-input", "give MODEL arguments or --config FILE, not both", { command });
  if (flags.config === undefined && models.length === 0)
    throw new CliError("bad-input", "missing MODEL: give one or more model paths, or --config FILE", { command });
  if (flags.modelName !== undefined && (models.length > 1 || flags.config !== undefined))
    throw new CliError(
      "bad-input",
      "--model-name names a single model: with several, give each an id in a --config file",
      { command },
    );
  const config = flags.config === undefined ? null : readServeConfig(flags.config);
  const file = flags.config ?? "";
  const listed = config === null ? models.map((p) => ({ path: p }) as ServeConfigModel) : config.models;
  const memoryBytes = budgetOf(
    flags.modelsMemory ?? config?.["models-memory"],
    flags.modelsMemory !== undefined ? "--models-memory" : `${file}: models-memory`,
  );
  // One MODEL with no budget loads at start as before, its errors its load's; the others are sized (and checked) now.
  const sized = listed.length > 1 || config !== null || memoryBytes !== null;
  const entries = listed.map((m, i): ModelEntry => {
    const name = (flag: string): string => (config === null ? `--${flag}` : `${file}: models[${i}].${flag}`);
    const settings = settingsOf(config === null ? defaults : overConfig(defaults, m), name);
    const id = m.id ?? (config === null ? flags.modelName : undefined) ?? path.basename(path.resolve(m.path));
    const bytes = sized ? weightFileBytes(m.path, settings.load.weights) : 0;
    return { path: m.path, id, aliases: m.aliases ?? [], settings, maxBatch: settings.load.maxSequences, bytes };
  });
  const seen = new Map<string, string>();
  for (const e of entries)
    for (const name of [e.id, ...e.aliases]) {
      const other = seen.get(name);
      if (other !== undefined)
        throw new CliError(
          "bad-input",
          `the model name "${name}" is used twice (${other} and ${e.path}): give each model its own id`,
          { command },
        );
      seen.set(name, e.path);
    }
  if (memoryBytes !== null)
    for (const e of entries)
      if (e.bytes > memoryBytes)
        throw new CliError(
          "bad-input",
          `the model '${e.id}' (${e.path}) has ${formatBytes(e.bytes)} of weights, more than the whole --models-memory budget of ${formatBytes(memoryBytes)}: raise --models-memory or leave the model out`,
          { command, file: e.path },
        );
  return { entries, memoryBytes };
}

// `poot serve --config FILE`: the models of a several-model server and their own options, as JSON whose keys are
// the `poot serve` flags of the same names; checked with ajv, each error one line naming the file and the field.
import * as path from "node:path";
import type { ErrorObject, ValidateFunction } from "ajv";
import { CliError } from "../errors.js";
import { ajv } from "../server/deps.js";
import { readTextFile } from "./read-file.js";

const command = "serve";

/** One model of a `--config` file: where it is, its id and aliases, and the options it overrides. */
export interface ServeConfigModel {
  /** The model folder or .gguf file (relative paths: from the config file's folder). */
  readonly path: string;
  /** The id clients name (default: the folder or file name). */
  readonly id?: string;
  /** Other names routed to this model. */
  readonly aliases?: readonly string[];
  /** `--backend` for this model. */
  readonly backend?: string;
  /** `--ctx` for this model. */
  readonly ctx?: number;
  /** `--page-size` for this model. */
  readonly "page-size"?: number;
  /** `--kv-pages` for this model. */
  readonly "kv-pages"?: number;
  /** `--weights` for this model. */
  readonly weights?: "f32" | "bf16";
  /** `--activations` for this model. */
  readonly activations?: "f32" | "fp8-static" | "fp8-dynamic";
  /** `--chat-template` for this model (relative paths: from the config file's folder). */
  readonly "chat-template"?: string;
  /** `--max-batch` for this model. */
  readonly "max-batch"?: number;
  /** `--prefix-cache` for this model. */
  readonly "prefix-cache"?: boolean;
}

/** A `poot serve --config` file. */
export interface ServeConfig {
  /** `--models-memory`: most bytes of loaded models' weights at once, e.g. "8G" (the flag wins over it). */
  readonly "models-memory"?: string;
  /** The models, in `/v1/models` order. */
  readonly models: readonly ServeConfigModel[];
}

const positive = { type: "integer", minimum: 1 } as const;

/** The JSON schema of a `--config` file (documented in the serve README). */
export const SERVE_CONFIG_SCHEMA = {
  type: "object",
  required: ["models"],
  additionalProperties: false,
  properties: {
    "models-memory": { type: "string", pattern: "^\\s*\\d+(\\.\\d+)?\\s*[kKmMgGtT]?(i?B)?\\s*$" },
    models: {
      type: "array",
      minItems: 1,
      items: {
        type: "object",
        required: ["path"],
        additionalProperties: false,
        properties: {
          path: { type: "string", minLength: 1 },
          id: { type: "string", minLength: 1 },
          aliases: { type: "array", items: { type: "string", minLength: 1 } },
          backend: { type: "string", minLength: 1 },
          ctx: { type: "integer", minimum: 2 },
          "page-size": positive,
          "kv-pages": positive,
          weights: { enum: ["f32", "bf16"] },
          activations: { enum: ["f32", "fp8-static", "fp8-dynamic"] },
          "chat-template": { type: "string", minLength: 1 },
          "max-batch": positive,
          "prefix-cache": { type: "boolean" },
        },
      },
    },
  },
} as const;

// Compiled on first use: importing @poot/serve (every `poot` command does) should not pay ajv's ~0.1 s compile.
let compiled: ValidateFunction<ServeConfig> | undefined;
function validator(): ValidateFunction<ServeConfig> {
  compiled ??= new (ajv())({ allErrors: false, strict: true }).compile<ServeConfig>(SERVE_CONFIG_SCHEMA);
  return compiled;
}

/** `/models/1/ctx` as `models[1].ctx`. */
function fieldOf(instancePath: string): string {
  return instancePath
    .split("/")
    .slice(1)
    .map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`))
    .join("");
}

/** One line for ajv's first error: the field and what is wrong with it. */
function describe(e: ErrorObject): string {
  const field = fieldOf(e.instancePath);
  const at = field === "" ? "the top level" : field;
  const params = e.params as Record<string, unknown>;
  if (e.keyword === "additionalProperties") return `${at} has an unknown field "${String(params.additionalProperty)}"`;
  if (e.keyword === "required") return `${at} needs the field "${String(params.missingProperty)}"`;
  if (e.keyword === "enum") return `${at} must be one of ${(params.allowedValues as unknown[]).join(", ")}`;
  if (e.keyword === "pattern") return `${at} must be a size like 512M or 8G`;
  return `${at} ${e.message ?? "is invalid"}`;
}

/** Reads and checks a `--config` file; a one-line CliError naming the file and the bad field otherwise. */
export function readServeConfig(file: string): ServeConfig {
  const text = readTextFile(file, command);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new CliError("bad-input", `${file} is not JSON: ${(err as Error).message}`, { command, file });
  }
  const validate = validator();
  if (!validate(json)) throw new CliError("bad-input", `${file}: ${describe(validate.errors![0]!)}`, { command, file });
  const dir = path.dirname(path.resolve(file));
  // Paths in the file are relative to it, wherever poot runs from.
  return {
    ...json,
    models: json.models.map((m) => ({
      ...m,
      path: path.resolve(dir, m.path),
      ...(m["chat-template"] === undefined ? {} : { "chat-template": path.resolve(dir, m["chat-template"]) }),
    })),
  };
}

// One entry point per artifact for callers that take "a model" (a folder or a .gguf file):
// the checkpoint, its ModelConfig and its Tokenizer, whichever format it is in.
import * as fs from "node:fs";
import type { Checkpoint } from "./checkpoint.js";
import type { ModelConfig } from "./config.js";
import { configFromGGUF } from "./config-gguf.js";
import { readHFConfig } from "./config-hf.js";
import { ModelError, ioError } from "./errors.js";
import { openGGUF, type GGUFCheckpoint } from "./gguf.js";
import { checkGGUFActivations, type HFQuantOptions } from "./hf-activations.js";
import { withHFQuantization } from "./hf-quant.js";
import { openSafetensors, type OpenSafetensorsOptions } from "./safetensors.js";
import { Tokenizer } from "./tokenizer.js";
import { tokenizerFromGGUF } from "./tokenizer-gguf.js";

/** Whether `model` names a GGUF file (by its magic, not its extension). */
export function isGGUF(model: string): boolean {
  try {
    if (!fs.statSync(model).isFile()) return false;
    const fd = fs.openSync(model, "r");
    const b = new Uint8Array(4);
    const n = fs.readSync(fd, b, 0, 4, 0);
    fs.closeSync(fd);
    return n === 4 && b[0] === 0x47 && b[1] === 0x47 && b[2] === 0x55 && b[3] === 0x46;
  } catch (cause) {
    throw ioError(cause, model);
  }
}

/** Opens a model's weights: a `.gguf` file, a `.safetensors` file, or a Hugging Face folder. */
export function openCheckpoint(model: string, options: OpenSafetensorsOptions & HFQuantOptions = {}): Checkpoint {
  const { activations, ...st } = options;
  if (isGGUF(model)) {
    checkGGUFActivations(activations, model);
    return openGGUF(model);
  }
  const ck = openSafetensors(model, st);
  try {
    return withHFQuantization(ck, model, activations === undefined ? {} : { activations });
  } catch (e) {
    ck.close();
    throw e;
  }
}

/** The ModelConfig of a folder (config.json) or GGUF file (its metadata; pass an open checkpoint to reuse it). */
export function loadModelConfig(model: string | GGUFCheckpoint): ModelConfig {
  if (typeof model !== "string") return configFromGGUF(model);
  if (!isGGUF(model)) return readHFConfig(model);
  const g = openGGUF(model);
  try {
    return configFromGGUF(g);
  } finally {
    g.close();
  }
}

/** The Tokenizer of a folder (tokenizer.json + tokenizer_config.json) or GGUF file (its vocabulary). */
export function loadTokenizer(model: string | GGUFCheckpoint): Tokenizer {
  if (typeof model !== "string") return tokenizerFromGGUF(model);
  if (!isGGUF(model)) return Tokenizer.fromFolder(model);
  const g = openGGUF(model);
  try {
    return tokenizerFromGGUF(g);
  } finally {
    g.close();
  }
}

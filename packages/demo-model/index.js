// Where the demo model's files are: `model/` inside the published package (copied there by `prepack` from the
// repository's models/demo), or the repository's models/demo in a workspace checkout.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const packed = fileURLToPath(new URL("./model", import.meta.url));
const workspace = fileURLToPath(new URL("../../models/demo", import.meta.url));

/** The folder holding the demo model (config.json, model.safetensors, tokenizer.json), or null when absent. */
export const demoModelDir = existsSync(`${packed}/config.json`)
  ? packed
  : existsSync(`${workspace}/config.json`)
    ? workspace
    : null;

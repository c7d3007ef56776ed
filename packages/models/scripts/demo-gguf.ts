// Writes models/demo/model.gguf from the committed Hugging Face folder models/demo (bf16 safetensors).
// usage: pnpm --filter @poot/models run demo-gguf [--in FOLDER] [--out FILE]; deterministic, Node only.
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { convertLlamaToGGUF } from "../src/index.js";

/** The repository root: the folder above this script holding pnpm-workspace.yaml (also when bundled to .cache/). */
function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, "pnpm-workspace.yaml"))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error("cannot find the repository root (pnpm-workspace.yaml)");
    dir = up;
  }
  return dir;
}
const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? path.resolve(process.argv[i + 1]!) : dflt;
};
const input = arg("in", path.join(repoRoot(), "models", "demo"));
const out = arg("out", path.join(input, "model.gguf"));
const t0 = performance.now();
const r = convertLlamaToGGUF(input, out, { name: "poot-demo" });
console.log(
  `wrote ${r.path}: ${r.bytes} bytes, ${r.tensors} tensors, in ${((performance.now() - t0) / 1000).toFixed(2)} s`,
);

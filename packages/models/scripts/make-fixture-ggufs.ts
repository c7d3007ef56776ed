// Regenerates the GGUF fixtures (and the float32 safetensors of the bf16-only hf families) listed in fixtures/generated.json (all, or the paths given) and checks each
// against the recorded sha256 of the original. @poot/testkit runs it when a test asks for one of them;
// by hand: `pnpm fixtures` at the repo root. Usage: make-fixture-ggufs.ts FIXTURES_DIR [PATH...]
import * as fs from "node:fs";
import * as path from "node:path";
import { readGeneratedList, regenerate, sha256 } from "./fixture-gguf.js";
import { buildFixtureSafetensors, type GeneratedSafetensors } from "./fixture-safetensors.js";

const [root, ...want] = process.argv.slice(2);
if (root === undefined) {
  console.error("usage: make-fixture-ggufs.ts FIXTURES_DIR [PATH...]");
  process.exit(2);
}
try {
  const list = readGeneratedList(path.resolve(root));
  const unknown = want.filter((w) => !list.some((s) => s.path === w));
  if (unknown.length > 0) throw new Error(`not in fixtures/generated.json: ${unknown.join(", ")}`);
  for (const spec of list.filter((s) => want.length === 0 || want.includes(s.path))) {
    const started = Date.now();
    if ((spec.type as string) === "safetensors-f32")
      writeChecked(path.resolve(root), spec as unknown as GeneratedSafetensors);
    else regenerate(path.resolve(root), spec);
    console.log(
      `fixtures/${spec.path}: regenerated, sha256 ${spec.sha256.slice(0, 12)}… matches (${Date.now() - started} ms)`,
    );
  }
} catch (e) {
  console.error(`make-fixture-ggufs: ${(e as Error).message}`);
  process.exit(1);
}

/** Writes a regenerated float32 safetensors file after checking it against the recorded sha256 of the original. */
function writeChecked(root: string, spec: GeneratedSafetensors): void {
  const bytes = buildFixtureSafetensors(root, spec);
  const got = sha256(bytes);
  if (got !== spec.sha256 || bytes.byteLength !== spec.bytes) {
    throw new Error(
      `fixtures/${spec.path}: regenerated file differs from the recorded original (sha256 ${got}, ${bytes.byteLength} bytes; recorded ${spec.sha256}, ${spec.bytes} bytes)`,
    );
  }
  const out = path.join(root, spec.path);
  const tmp = `${out}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, bytes);
  fs.renameSync(tmp, out);
}

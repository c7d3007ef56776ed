// Regenerates the GGUF fixtures listed in fixtures/generated.json (all, or the paths given) and checks each
// against the recorded sha256 of the original. @poot/testkit runs it when a test asks for one of them;
// by hand: `pnpm fixtures` at the repo root. Usage: make-fixture-ggufs.ts FIXTURES_DIR [PATH...]
import * as path from "node:path";
import { readGeneratedList, regenerate } from "./fixture-gguf.js";

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
    regenerate(path.resolve(root), spec);
    console.log(`fixtures/${spec.path}: regenerated, sha256 ${spec.sha256.slice(0, 12)}… matches (${Date.now() - started} ms)`);
  }
} catch (e) {
  console.error(`make-fixture-ggufs: ${(e as Error).message}`);
  process.exit(1);
}

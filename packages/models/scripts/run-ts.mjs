// Runs a TypeScript script of this package on Node 20 (no type stripping there): esbuild bundles the
// script with the package sources into .cache/, leaving npm dependencies external, then Node imports it.
import { build } from "esbuild";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const pkg = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const [script, ...args] = process.argv.slice(2);
if (!script) {
  console.error("usage: node scripts/run-ts.mjs SCRIPT.ts [args...]");
  process.exit(2);
}
const out = path.join(pkg, ".cache", "scripts", path.basename(script).replace(/\.ts$/, ".mjs"));
await build({
  entryPoints: [path.resolve(script)],
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  conditions: ["source"],
  outfile: out,
  logLevel: "warning",
});
process.argv = [process.argv[0], out, ...args];
await import(pathToFileURL(out).href);

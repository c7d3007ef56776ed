// The playground's scripts and model files: the page and its CPU worker bundled with esbuild from the workspace
// sources (as the browser test harness of decision 0703 does), and the demo model copied beside them.
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { GEN_PUBLIC, REPO, SITE } from "./paths.mjs";

/** The builtins' names libraries import for file-system paths the page never takes. */
const NAMES = [
  "readFileSync",
  "existsSync",
  "statSync",
  "openSync",
  "readSync",
  "closeSync",
  "fstatSync",
  "writeFileSync",
  "mkdirSync",
  "readdirSync",
  "join",
  "dirname",
  "basename",
  "resolve",
  "extname",
  "isAbsolute",
  "relative",
  "createHash",
  "randomInt",
  "fileURLToPath",
  "cpus",
  "availableParallelism",
];

// A path that reaches a Node builtin in the page fails loudly instead of bundling Node into it.
const nodeStub = {
  name: "node-builtins-unavailable",
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (a) => ({ path: a.path, namespace: "node-stub" }));
    b.onLoad({ filter: /.*/, namespace: "node-stub" }, (a) => ({
      loader: "js",
      contents: `const fail = (n) => () => { throw new Error(${JSON.stringify(a.path)} + "." + n + " is not available in a browser"); };\nmodule.exports = Object.fromEntries(${JSON.stringify(NAMES)}.map((n) => [n, fail(n)]));`,
    }));
  },
};

/** The demo model's files the page fetches. */
export const DEMO_FILES = [
  "config.json",
  "model.safetensors",
  "tokenizer.json",
  "tokenizer_config.json",
  "generation_config.json",
];

/** Writes public/generated/playground/{page,worker}.js and public/generated/demo/*. */
export async function generatePlayground() {
  const out = join(GEN_PUBLIC, "playground");
  await build({
    entryPoints: { page: join(SITE, "src/playground/page.ts"), worker: join(SITE, "src/playground/worker.ts") },
    outdir: out,
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    conditions: ["source"],
    logLevel: "warning",
    minify: true,
    plugins: [nodeStub],
    external: ["webgpu"],
  });
  mkdirSync(join(GEN_PUBLIC, "demo"), { recursive: true });
  for (const f of DEMO_FILES) copyFileSync(join(REPO, "models/demo", f), join(GEN_PUBLIC, "demo", f));
}

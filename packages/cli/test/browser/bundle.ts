// Bundles the browser page and its CPU worker with esbuild from the workspace sources. Library modules import a few
// Node builtins at top level for file-system paths the page never takes; they resolve to a module whose every
// function throws a clear error, so a path that did reach one fails loudly instead of bundling Node into the page.

import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";

/** The builtins' names the libraries import (a missing one is undefined in the page, and fails when called). */
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

const nodeStub: Plugin = {
  name: "node-builtins-unavailable",
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (a) => ({ path: a.path, namespace: "node-stub" }));
    b.onLoad({ filter: /.*/, namespace: "node-stub" }, (a) => ({
      loader: "js",
      contents: `const fail = (n) => () => { throw new Error(${JSON.stringify(a.path)} + "." + n + " is not available in a browser"); };\nmodule.exports = Object.fromEntries(${JSON.stringify(NAMES)}.map((n) => [n, fail(n)]));`,
    }));
  },
};

/**
 * The page script, the CPU worker script and the CPU pool's thread script (backend-cpu's worker entry, which its
 * browser transport starts from `worker-browser.js` beside the module that starts it: here, `/cpu-worker.js`).
 */
export async function bundlePage(): Promise<{ page: string; worker: string; thread: string }> {
  const one = async (file: string): Promise<string> => {
    const r = await build({
      entryPoints: [fileURLToPath(new URL(file, import.meta.url))],
      bundle: true,
      format: "esm",
      platform: "browser",
      target: "es2022",
      conditions: ["source"],
      write: false,
      logLevel: "silent",
      plugins: [nodeStub],
      // webgpu (Dawn) is Node's GPU; the page uses navigator.gpu.
      external: ["webgpu"],
    });
    return r.outputFiles[0]!.text;
  };
  const [page, worker, thread] = await Promise.all([
    one("./page.ts"),
    one("./cpu-worker.ts"),
    one("../../../backend-cpu/src/worker-browser.ts"),
  ]);
  return { page, worker, thread };
}

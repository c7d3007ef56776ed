// @poot/executor's own conformance suite, unchanged, on the synchronous WebGPU executor: the device in a
// worker thread on lavapipe, every call blocking on Atomics until the worker answers.

import { readFile } from "node:fs/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";
import { runConformance } from "@poot/executor/conformance";
import { createSyncWgpuExecutor } from "@poot/backend-wgpu/node";
import { lavapipeIcd, openTestContext } from "./helpers.js";

async function noAdapterReason(): Promise<string | undefined> {
  const r = await openTestContext();
  if ("ctx" in r) {
    r.ctx.dispose();
    return undefined;
  }
  return r.reason;
}

/**
 * The worker runs outside vitest's transform, so its entry is bundled from the sources first. kernelgen finds
 * its kernel assets relative to its own module: that module keeps its original URL inside the bundle.
 */
async function bundleWorker(): Promise<URL> {
  const out = fileURLToPath(new URL("../.worker/sync-worker.mjs", import.meta.url));
  await build({
    entryPoints: [fileURLToPath(new URL("../src/sync-worker.ts", import.meta.url))],
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20",
    outfile: out,
    external: ["webgpu"],
    conditions: ["source"],
    logLevel: "silent",
    plugins: [
      {
        name: "keep-module-url",
        setup(b) {
          b.onLoad({ filter: /kernelgen[\\/]src[\\/]library\.ts$/ }, async (a) => ({
            contents: (await readFile(a.path, "utf8")).replaceAll(
              "import.meta.url",
              JSON.stringify(pathToFileURL(a.path).href),
            ),
            loader: "ts",
          }));
        },
      },
    ],
  });
  return pathToFileURL(out);
}

const skip = await noAdapterReason();
const workerUrl = skip === undefined ? await bundleWorker() : undefined;
const icd = lavapipeIcd();

runConformance(
  "wgpu (sync executor, device in a worker)",
  () => createSyncWgpuExecutor({ workerUrl: workerUrl!, gpu: icd !== undefined ? { vulkanDriverFiles: icd } : {} }),
  {
    dtypes: ["f32", "f16", "bf16"],
    ...(skip !== undefined ? { skip } : {}),
  },
);

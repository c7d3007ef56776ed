import { defineConfig } from "tsup";

// JS only: declarations come from `tsc -b` (project references), one .d.ts per module.
export default defineConfig({
  // The text and engine workers are files of their own: a worker thread is started from a script
  // (src/server/text-worker.ts, src/server/engine-worker.ts).
  entry: {
    index: "src/index.ts",
    "text-worker": "src/server/text-worker-main.ts",
    "engine-worker": "src/server/engine-worker-main.ts",
  },
  format: ["esm"],
  target: "node20",
  sourcemap: true,
  clean: true,
  dts: false,
});

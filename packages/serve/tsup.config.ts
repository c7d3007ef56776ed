import { defineConfig } from "tsup";

// JS only: declarations come from `tsc -b` (project references), one .d.ts per module.
export default defineConfig({
  // The text worker is its own file: a worker thread is started from a script (src/server/text-worker.ts).
  entry: { index: "src/index.ts", "text-worker": "src/server/text-worker-main.ts" },
  format: ["esm"],
  target: "node20",
  sourcemap: true,
  clean: true,
  dts: false,
});

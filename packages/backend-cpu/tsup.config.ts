import { defineConfig } from "tsup";

// JS only: declarations come from `tsc -b` (project references), one .d.ts per module. The worker entries are the
// pool's threads, loaded by URL beside the module that starts them (transport-node.ts, transport-browser.ts).
export default defineConfig({
  entry: ["src/index.ts", "src/browser.ts", "src/worker-node.ts", "src/worker-browser.ts"],
  format: ["esm"],
  target: "node20",
  sourcemap: true,
  clean: true,
  dts: false,
});

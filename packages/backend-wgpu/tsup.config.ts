import { defineConfig } from "tsup";

// JS only: declarations come from `tsc -b` (project references), one .d.ts per module.
export default defineConfig({
  entry: {
    index: "src/index.ts",
    node: "src/node.ts",
    executor: "src/executor/index.ts",
    "sync-worker": "src/sync-worker.ts",
  },
  format: ["esm"],
  target: "es2022",
  sourcemap: true,
  clean: true,
  dts: false,
  external: ["webgpu"],
});

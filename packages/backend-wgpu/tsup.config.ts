import { defineConfig } from "tsup";

// JS only: declarations come from `tsc -b` (project references), one .d.ts per module.
export default defineConfig({
  entry: ["src/index.ts", "src/node.ts", "src/sync-worker.ts"],
  format: ["esm"],
  target: "es2022",
  sourcemap: true,
  clean: true,
  dts: false,
  external: ["webgpu"],
});

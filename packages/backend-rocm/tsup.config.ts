import { defineConfig } from "tsup";

// JS only: declarations come from `tsc -b` (project references), one .d.ts per module.
export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm"],
  target: "node20",
  sourcemap: true,
  clean: true,
  dts: false,
});

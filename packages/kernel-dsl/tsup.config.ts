import { defineConfig } from "tsup";

// JS only: declarations come from `tsc -b` (project references), one .d.ts per module.
export default defineConfig({
  entry: ["src/index.ts", "src/pootc.ts"],
  format: ["esm"],
  // esbuild is an optional peer of pootc, imported when pootc compiles (decision 1904), never bundled.
  external: ["esbuild"],
  target: "node20",
  sourcemap: true,
  clean: true,
  dts: false,
});

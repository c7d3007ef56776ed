import { defineConfig } from "tsup";

// JS only: declarations come from `tsc -b` (project references), one .d.ts per module.
export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm"],
  target: "node20",
  sourcemap: true,
  clean: true,
  dts: false,
  // tsup keeps `dependencies` external but would bundle the optional ones: the GPU backends stay packages,
  // imported at run time only when present.
  external: [/^@poot\//, "webgpu", "koffi"],
});

import { defineConfig } from "tsup";

// JS only: declarations come from `tsc -b` (project references), one .d.ts per module.
export default defineConfig({
  // serve-executors is its own file: `poot serve`'s engine worker thread imports it to make executors there.
  entry: ["src/index.ts", "src/serve-executors.ts"],
  format: ["esm"],
  target: "node20",
  sourcemap: true,
  clean: true,
  dts: false,
  // tsup keeps `dependencies` external but would bundle the optional ones: the GPU backends stay packages,
  // imported at run time only when present.
  external: [/^@poot\//, "webgpu", "koffi"],
});

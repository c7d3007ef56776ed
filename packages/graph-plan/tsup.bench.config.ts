import { defineConfig } from "tsup";

// The compile benchmark: bundles bench/compile.ts (with the package sources) into .bench/ and runs it with node.
export default defineConfig({
  entry: { compile: "bench/compile.ts" },
  outDir: ".bench",
  format: ["esm"],
  target: "node20",
  clean: true,
  dts: false,
  // Bundle the workspace sources so the benchmark needs no prior build.
  noExternal: [/^@poot\//],
  esbuildOptions(o) {
    o.conditions = ["source"];
  },
});

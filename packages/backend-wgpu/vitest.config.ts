import { fileURLToPath } from "node:url";
import { defineProject } from "vitest/config";

export default defineProject({
  // Public-API tests import the package by name, as a user would; point that at the sources.
  resolve: {
    conditions: ["source"],
    alias: {
      "@poot/backend-wgpu/executor": fileURLToPath(new URL("./src/executor/index.ts", import.meta.url)),
      "@poot/backend-wgpu/node": fileURLToPath(new URL("./src/node.ts", import.meta.url)),
      "@poot/backend-wgpu": fileURLToPath(new URL("./src/index.ts", import.meta.url)),
    },
  },
  ssr: { resolve: { conditions: ["source"] } },
  // One Dawn device at a time on a 2-core machine: files run one after another.
  test: {
    name: "backend-wgpu",
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 120_000,
    fileParallelism: false,
  },
});

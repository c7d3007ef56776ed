import { fileURLToPath } from "node:url";
import { defineProject } from "vitest/config";

export default defineProject({
  resolve: {
    conditions: ["source"],
    // Public-API tests import the package by name; vite does not resolve a package's self-reference.
    alias: { "@poot/graph-ir": fileURLToPath(new URL("./src/index.ts", import.meta.url)) },
  },
  test: { name: "graph-ir", include: ["src/**/*.test.ts", "test/**/*.test.ts"] },
});

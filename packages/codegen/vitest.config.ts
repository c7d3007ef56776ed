import { fileURLToPath } from "node:url";
import { defineProject } from "vitest/config";

export default defineProject({
  // Public-API tests import the package by name, as a user would; point that at the sources.
  resolve: {
    conditions: ["source"],
    alias: { "@poot/codegen": fileURLToPath(new URL("./src/index.ts", import.meta.url)) },
  },
  ssr: { resolve: { conditions: ["source"] } },
  test: { name: "codegen", include: ["src/**/*.test.ts", "test/**/*.test.ts"], testTimeout: 120_000 },
});

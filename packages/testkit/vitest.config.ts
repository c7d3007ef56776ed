import { fileURLToPath } from "node:url";
import { defineProject } from "vitest/config";

export default defineProject({
  resolve: {
    conditions: ["source"],
    // The tests import the package by name, as every other package's tests do.
    alias: { "@poot/testkit": fileURLToPath(new URL("./src/index.ts", import.meta.url)) },
  },
  test: { name: "testkit", include: ["test/**/*.test.ts"], testTimeout: 120_000 },
});

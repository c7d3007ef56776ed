import { fileURLToPath } from "node:url";
import { defineProject } from "vitest/config";

export default defineProject({
  resolve: {
    conditions: ["source"],
    // Public-API tests import the package by name; vite does not resolve a package's self-reference.
    alias: { "@poot/graph-plan": fileURLToPath(new URL("./src/index.ts", import.meta.url)) },
  },
  // Workspace dependencies (graph-ir) run from their sources; SSR resolution needs the condition too.
  ssr: { resolve: { conditions: ["source"] } },
  test: { name: "graph-plan", include: ["src/**/*.test.ts", "test/**/*.test.ts"] },
});

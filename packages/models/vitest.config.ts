import { fileURLToPath } from "node:url";
import { defineProject } from "vitest/config";

export default defineProject({
  // Public-API tests import "@poot/models" by name; a package cannot depend on itself, so alias it to the sources.
  resolve: {
    conditions: ["source"],
    alias: { "@poot/models": fileURLToPath(new URL("./src/index.ts", import.meta.url)) },
  },
  // Workspace dependencies (graph-ir) run from their sources; SSR resolution needs the condition too.
  ssr: { resolve: { conditions: ["source"] } },
  test: { name: "models", include: ["src/**/*.test.ts", "test/**/*.test.ts"] },
});

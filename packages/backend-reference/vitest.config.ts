import { fileURLToPath } from "node:url";
import { defineProject } from "vitest/config";

export default defineProject({
  // Public-API tests import "@poot/backend-reference" by name; a package cannot depend on itself, so alias it.
  resolve: {
    conditions: ["source"],
    alias: { "@poot/backend-reference": fileURLToPath(new URL("./src/index.ts", import.meta.url)) },
  },
  // Workspace dependencies run from their sources; SSR resolution needs the condition too.
  ssr: { resolve: { conditions: ["source"] } },
  test: { name: "backend-reference", include: ["src/**/*.test.ts", "test/**/*.test.ts"] },
});

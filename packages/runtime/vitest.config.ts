import { fileURLToPath } from "node:url";
import { defineProject } from "vitest/config";

export default defineProject({
  // Public-API tests import "@poot/runtime" by name; a package cannot depend on itself, so alias it to the sources.
  resolve: {
    conditions: ["source"],
    alias: { "@poot/runtime": fileURLToPath(new URL("./src/index.ts", import.meta.url)) },
  },
  // Workspace dependencies run from their sources; SSR resolution needs the condition too.
  ssr: { resolve: { conditions: ["source"] } },
  test: { name: "runtime", include: ["src/**/*.test.ts", "test/**/*.test.ts"], testTimeout: 120_000 },
});

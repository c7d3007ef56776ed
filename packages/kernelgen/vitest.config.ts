import { fileURLToPath } from "node:url";
import { defineProject } from "vitest/config";

// The package imports itself by name in test/ (as users do); vite does not resolve self-references, so alias it.
export default defineProject({
  resolve: {
    conditions: ["source"],
    alias: [{ find: /^@poot\/kernelgen$/, replacement: fileURLToPath(new URL("./src/index.ts", import.meta.url)) }],
  },
  // Workspace dependencies run from their sources (no build needed); SSR resolution needs the condition too.
  ssr: { resolve: { conditions: ["source"] } },
  test: { name: "kernelgen", include: ["src/**/*.test.ts", "test/**/*.test.ts"], testTimeout: 30_000 },
});

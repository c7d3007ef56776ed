import { defineProject } from "vitest/config";

export default defineProject({
  resolve: { conditions: ["source"] },
  // Workspace dependencies run from their sources; SSR resolution needs the condition too.
  ssr: { resolve: { conditions: ["source"] } },
  test: { name: "serve", include: ["src/**/*.test.ts", "test/**/*.test.ts"] },
});

import { defineProject } from "vitest/config";

export default defineProject({
  resolve: { conditions: ["source"] },
  // Workspace dependencies run from their sources; SSR resolution needs the condition too.
  ssr: { resolve: { conditions: ["source"] } },
  // Tests spawn the CLI and servers; a loaded machine needs more than the 5 s default (hangs still fail).
  test: { name: "cli", include: ["src/**/*.test.ts", "test/**/*.test.ts"], testTimeout: 60_000 },
});

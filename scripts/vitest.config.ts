import { defineProject } from "vitest/config";

// The `tooling` project: tests of the workspace scripts (lint checks), run by the root `pnpm test`.
export default defineProject({
  test: { name: "tooling", include: ["test/**/*.test.ts"], testTimeout: 180_000 },
});

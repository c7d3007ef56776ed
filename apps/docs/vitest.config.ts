import { defineProject } from "vitest/config";

// The built site in headless Chromium: every page, the explorer and the playground (needs `pnpm build` first).
export default defineProject({
  test: { name: "docs", include: ["test/**/*.test.ts"], testTimeout: 600_000, hookTimeout: 600_000 },
});

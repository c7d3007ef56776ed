import { defineProject } from "vitest/config";

export default defineProject({
  resolve: { conditions: ["source"] },
  test: { name: "codegen", include: ["src/**/*.test.ts", "test/**/*.test.ts"], testTimeout: 60_000 },
});

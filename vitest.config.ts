import { defineConfig } from "vitest/config";

// One run over every package; each package also runs alone with its own `vitest run`.
export default defineConfig({
  resolve: { conditions: ["source"] },
  test: {
    projects: ["packages/*", "apps/*", "scripts"],
  },
});

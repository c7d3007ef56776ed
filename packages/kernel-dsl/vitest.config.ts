import { fileURLToPath } from "node:url";
import { defineProject } from "vitest/config";

// The package imports itself by name in test/ (as users do); vite does not resolve self-references, so alias it.
export default defineProject({
  resolve: {
    conditions: ["source"],
    alias: [
      { find: /^@poot\/kernel-dsl\/pootc$/, replacement: fileURLToPath(new URL("./src/pootc.ts", import.meta.url)) },
      { find: /^@poot\/kernel-dsl$/, replacement: fileURLToPath(new URL("./src/index.ts", import.meta.url)) },
    ],
  },
  test: { name: "kernel-dsl", include: ["src/**/*.test.ts", "test/**/*.test.ts"] },
});

import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Not part of `pnpm test`: writes the PTX run cases for tools/ptx-cuda-check.py.
export default defineConfig({
  resolve: {
    conditions: ["source"],
    alias: { "@poot/codegen": fileURLToPath(new URL("../src/index.ts", import.meta.url)) },
  },
  ssr: { resolve: { conditions: ["source"] } },
  test: { include: ["tools/*.gpu.ts"], root: fileURLToPath(new URL("..", import.meta.url)) },
});

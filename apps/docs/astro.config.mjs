// The poot documentation site: Starlight over the hand-written guides in src/content/docs and the pages that
// scripts/generate.mjs writes before each build (CLI reference, decision records, explorer data, API reference).
import { existsSync } from "node:fs";
import starlight from "@astrojs/starlight";
import { defineConfig, passthroughImageService } from "astro/config";

// The playground's CPU backend needs a shared WebAssembly.Memory, which browsers give only to isolated pages.
// docs/architecture.md becomes a page when the repository has it (scripts/gen/architecture.mjs).
const design = existsSync(new URL("./src/content/docs/architecture/design.md", import.meta.url))
  ? ["architecture/design"]
  : [];

const isolation = { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp" };

export default defineConfig({
  // No sharp: images are served as they are (sharp's install script is not allowed in this workspace).
  image: { service: passthroughImageService() },
  server: { headers: isolation },
  vite: { preview: { headers: isolation }, server: { headers: isolation } },
  integrations: [
    starlight({
      title: "poot",
      description: "An LLM compiler and runtime in TypeScript.",
      pagefind: false,
      sidebar: [
        { label: "Start", items: ["getting-started", "http-api", "embedding"] },
        { label: "See it work", items: ["explorer", "playground", "benchmarks"] },
        { label: "Backends", items: ["backends"] },
        {
          label: "How it works",
          items: ["architecture", ...design, "extending/model-family", "extending/kernel", "extending/backend"],
        },
        { label: "Reference", items: ["reference/cli", { label: "API reference (typedoc)", link: "/generated/api/" }] },
        { label: "Decision records", collapsed: true, autogenerate: { directory: "decisions" } },
      ],
    }),
  ],
});

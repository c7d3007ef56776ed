#!/usr/bin/env node
// The `poot` command: runs the built CLI in dist/ (decision 0003). Node 20 cannot run the TypeScript
// sources without a runtime compiler, so a checkout without dist/ is told to build first.
import { existsSync } from "node:fs";

const entry = new URL("../dist/index.js", import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write("poot: @poot/cli is not built (no dist/index.js). Run `pnpm build` in the repository root first.\n");
  process.exit(1);
}
const { runCli } = await import(entry.href);
process.exitCode = await runCli(process.argv.slice(2));

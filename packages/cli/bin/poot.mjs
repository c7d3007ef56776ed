#!/usr/bin/env node
// The `poot` command: runs the built CLI in dist/ (decision 0003). Node 20 cannot run the TypeScript
// sources without a runtime compiler, so a checkout without dist/ is told to build first.
import { existsSync } from "node:fs";

const entry = new URL("../dist/index.js", import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write(
    "poot: @poot/cli is not built (no dist/index.js). Run `pnpm build` in the repository root first.\n",
  );
  process.exit(1);
}
const { runCli } = await import(entry.href);
try {
  process.exitCode = await runCli(process.argv.slice(2));
} catch (err) {
  // Not the user's error: one line, and the stack only when asked for (POOT_DEBUG=1).
  const message = err instanceof Error ? err.message.split("\n")[0] : String(err);
  process.stderr.write(`poot: internal error: ${message} (set POOT_DEBUG=1 for the stack; please report it)\n`);
  if (process.env.POOT_DEBUG === "1" && err instanceof Error) process.stderr.write(`${err.stack}\n`);
  process.exitCode = 1;
}

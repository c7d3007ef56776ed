// Locates ../shared/fixtures from the repo root (the folder holding pnpm-workspace.yaml).
// Tests that need it skip with a message when it is absent (a user's clone has no ../shared).
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, "pnpm-workspace.yaml"))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error("repo root (pnpm-workspace.yaml) not found");
    dir = up;
  }
  return dir;
}

/** Absolute path of ../shared/fixtures, or undefined when absent. */
export const FIXTURES: string | undefined = (() => {
  // POOT_FIXTURES points elsewhere (a worktree whose parent has no shared/ folder).
  const p = process.env["POOT_FIXTURES"] ?? path.resolve(repoRoot(), "../shared/fixtures");
  return fs.existsSync(p) ? p : undefined;
})();

/** Message used when fixtures are missing. */
export const NO_FIXTURES = "../shared/fixtures is absent: fixture tests skipped";

/** Path under the fixtures folder (callers guard on FIXTURES first). */
export function fixture(...parts: string[]): string {
  return path.join(FIXTURES ?? "/nonexistent", ...parts);
}

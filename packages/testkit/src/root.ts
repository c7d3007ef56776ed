// Where the repository and its fixtures/ folder are: the nearest folder above this file holding
// pnpm-workspace.yaml (the same from src/ under vitest and from dist/ under node).
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

function findRepo(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, "pnpm-workspace.yaml"))) {
    const up = path.dirname(dir);
    if (up === dir)
      throw new Error("@poot/testkit: no pnpm-workspace.yaml above the package (run it inside the poot repository)");
    dir = up;
  }
  return dir;
}

/** Absolute path of the repository root. */
export const REPO_ROOT: string = findRepo();

/** Absolute path of the fixtures folder. */
export const FIXTURES_ROOT: string = path.join(REPO_ROOT, "fixtures");

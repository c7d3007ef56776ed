// The product as a user installs it: every public workspace package packed with pnpm, then installed with npm from
// those tarballs alone into an empty folder (no workspace links; third-party packages from the npm registry). The
// pack-and-install test and the benchmarks that measure what users run (all package assets where an install puts
// them) share it.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { REPO_ROOT } from "./root.js";

/**
 * Packs every workspace package that is not private (`pnpm pack`) into `dest`.
 * @returns The tarballs' paths.
 * @throws Error naming the package whose `pnpm pack` failed.
 */
export function packWorkspace(dest: string, root: string = REPO_ROOT): string[] {
  fs.mkdirSync(dest, { recursive: true });
  for (const pkg of fs.readdirSync(path.join(root, "packages"))) {
    const dir = path.join(root, "packages", pkg);
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { private?: boolean };
    if (manifest.private === true) continue;
    const r = spawnSync("pnpm", ["pack", "--pack-destination", dest], { cwd: dir, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`pnpm pack in packages/${pkg} failed: ${r.stderr}`);
  }
  return fs
    .readdirSync(dest)
    .filter((f) => f.endsWith(".tgz"))
    .map((f) => path.join(dest, f));
}

/**
 * Installs `specs` (tarball paths or registry specs) with npm into `app`, an empty folder it creates with a private
 * package.json. The installed `poot` is then `app/node_modules/.bin/poot`.
 * @throws Error with npm's stderr when the install fails.
 */
export function npmInstall(app: string, specs: readonly string[]): void {
  fs.mkdirSync(app, { recursive: true });
  fs.writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "poot-installed", private: true }));
  const r = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", ...specs], {
    cwd: app,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`npm install of the tarballs failed: ${r.stderr}`);
}

// Public-API tests of the `poot` bin as a user runs it: `node bin/poot.mjs ...` over the built dist/,
// and the message a checkout without dist/ gets. The version oracle is package.json.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const pkgDir = fileURLToPath(new URL("..", import.meta.url));
const bin = join(pkgDir, "bin/poot.mjs");
const built = existsSync(join(pkgDir, "dist/index.js"));
const version = (JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as { version: string }).version;

const poot = (...args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: "utf8" });

test.skipIf(!built)("poot --version prints the package version (needs `pnpm build`)", () => {
  const res = poot("--version");
  expect(res.stderr).toBe("");
  expect(res.stdout).toBe(`${version}\n`);
  expect(res.status).toBe(0);
});

test.skipIf(!built)("poot --help exits 0; an unknown command exits 2 naming it (needs `pnpm build`)", () => {
  const help = poot("--help");
  expect(help.status).toBe(0);
  expect(help.stdout).toContain("Usage: poot");
  expect(help.stdout).toMatch(/ir <file>\s+print a graph saved as graph-ir JSON/);
  const bad = poot("frobnicate");
  expect(bad.status).toBe(2);
  expect(bad.stderr).toContain("unknown command 'frobnicate'");
});

test("without dist/, the bin says to run `pnpm build` and exits 1", () => {
  const dir = mkdtempSync(join(tmpdir(), "poot-bin-"));
  try {
    mkdirSync(join(dir, "bin"));
    copyFileSync(bin, join(dir, "bin/poot.mjs"));
    copyFileSync(join(pkgDir, "package.json"), join(dir, "package.json"));
    const res = spawnSync(process.execPath, [join(dir, "bin/poot.mjs"), "--version"], { encoding: "utf8" });
    expect(res.status).toBe(1);
    expect(res.stderr).toContain("Run `pnpm build`");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

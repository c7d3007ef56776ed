// Tests of the formatter gate in `pnpm lint`: Biome with the repository's own biome.json fails on a planted
// unformatted file (naming it) and passes on the same file once formatted.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, test } from "vitest";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const biome = join(repo, "node_modules/.bin/biome");

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A temp folder holding the repo's biome.json (VCS integration off: the folder is no git work tree) and `files`. */
function plant(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "poot-format-"));
  dirs.push(root);
  const config = JSON.parse(readFileSync(join(repo, "biome.json"), "utf8")) as { vcs?: unknown };
  config.vcs = { enabled: false };
  writeFileSync(join(root, "biome.json"), JSON.stringify(config));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(root, name), text);
  return root;
}

/** `biome format <files>` in `root` (the check `pnpm lint` runs, on the planted files only). */
function check(root: string, files: string[]): { status: number | null; out: string } {
  const r = spawnSync(biome, ["format", ...files], { cwd: root, encoding: "utf8" });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe("pnpm lint's formatter gate (Biome, the root biome.json)", () => {
  test("a planted unformatted file fails, named in the report", () => {
    const root = plant({ "bad.ts": "export const x = {a:1,\n\n\n   b:[1,2,3]}\n" });
    const r = check(root, ["bad.ts"]);
    expect(r.status).not.toBe(0);
    expect(r.out).toContain("bad.ts");
  });

  test("the same code, formatted, passes", () => {
    const root = plant({ "good.ts": "export const x = { a: 1, b: [1, 2, 3] };\n" });
    expect(check(root, ["good.ts"]).status).toBe(0);
  });

  test("a line past 120 characters is rewrapped, so an over-long line fails", () => {
    const long = `export const names = [${Array.from({ length: 20 }, (_, i) => `"name${i}"`).join(", ")}];\n`;
    const r = check(plant({ "long.ts": long }), ["long.ts"]);
    expect(r.status).not.toBe(0);
  });
});

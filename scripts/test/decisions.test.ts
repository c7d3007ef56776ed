// Tests of the decision-record check: the real docs/decisions passes; planted records without a status, with an
// unknown status or missing from the index fail, naming the file.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, test } from "vitest";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const script = join(repo, "scripts/check-decisions.mjs");
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function check(root: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [script, "--root", root], { encoding: "utf8" });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

function plant(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "poot-decisions-"));
  dirs.push(root);
  mkdirSync(join(root, "docs/decisions"), { recursive: true });
  for (const [f, text] of Object.entries(files)) writeFileSync(join(root, "docs/decisions", f), text);
  return root;
}

const INDEX = "| [0001](0001-a.md) | a | accepted |\n| [0002](0002-b.md) | b | superseded by 0001 |\n";

describe("check-decisions", () => {
  test("the real tree passes", () => {
    const r = check(repo);
    expect(r.out).toMatch(/check-decisions: \d+ decision records/);
    expect(r.status).toBe(0);
  });

  test("records with statuses and index rows pass", () => {
    expect(check(plant({ "README.md": INDEX, "0001-a.md": "# 0001 — a\n\nStatus: accepted\n", "0002-b.md": "# 0002 — b\n\nStatus: superseded by [0001](0001-a.md)\n" })).status).toBe(0);
  });

  test("a record without a status fails, naming it", () => {
    const r = check(plant({ "README.md": INDEX, "0001-a.md": "# 0001 — a\n\nStatus: accepted\n", "0002-b.md": "# 0002 — b\n\n## Context\n" }));
    expect(r.status).toBe(1);
    expect(r.out).toContain('docs/decisions/0002-b.md: no "Status: accepted"');
  });

  test("an unknown status and a record missing from the index fail", () => {
    const r = check(plant({ "README.md": INDEX, "0001-a.md": "# 0001 — a\n\nStatus: maybe\n", "0002-b.md": "# 0002 — b\n\nStatus: accepted\n", "0003-c.md": "# 0003 — c\n\nStatus: accepted\n" }));
    expect(r.status).toBe(1);
    expect(r.out).toContain('0001-a.md: status "maybe" is neither accepted nor superseded by NNNN');
    expect(r.out).toContain("docs/decisions/README.md: no row for 0003-c.md");
  });
});

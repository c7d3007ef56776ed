// Tests of the decision-record check: the real docs/decisions passes; planted records without a status or with an
// unknown status fail naming the file, a stale index fails, and --write makes the index that then passes.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

function check(root: string, ...args: string[]): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [script, "--root", root, ...args], { encoding: "utf8" });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

function plant(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "poot-decisions-"));
  dirs.push(root);
  mkdirSync(join(root, "docs/decisions"), { recursive: true });
  for (const [f, text] of Object.entries(files)) writeFileSync(join(root, "docs/decisions", f), text);
  return root;
}

const A = "# 0001 — a\n\nStatus: accepted\n";
const B = "# 0002 — b\n\nStatus: superseded by [0001](0001-a.md) — b was wrong\n";

describe("check-decisions", () => {
  test("the real tree passes", () => {
    const r = check(repo);
    expect(r.out).toMatch(/check-decisions: \d+ decision records/);
    expect(r.status).toBe(0);
  });

  test("--write makes the index from titles and statuses; then the check passes", () => {
    const root = plant({ "0001-a.md": A, "0002-b.md": B });
    expect(check(root).status).toBe(1);
    expect(check(root, "--write").status).toBe(0);
    const index = readFileSync(join(root, "docs/decisions/README.md"), "utf8");
    expect(index).toContain("| [0001](0001-a.md) | a | accepted |\n| [0002](0002-b.md) | b | superseded by 0001 |\n");
    expect(check(root).status).toBe(0);
  });

  test("a record without a status fails, naming it", () => {
    const r = check(plant({ "0001-a.md": A, "0002-b.md": "# 0002 — b\n\n## Context\n" }), "--write");
    expect(r.status).toBe(1);
    expect(r.out).toContain('docs/decisions/0002-b.md: no "Status: accepted"');
  });

  test("an unknown status and a stale index fail", () => {
    const root = plant({ "0001-a.md": A, "0002-b.md": B });
    check(root, "--write");
    writeFileSync(join(root, "docs/decisions/0003-c.md"), "# 0003 — c\n\nStatus: maybe\n");
    const r = check(root);
    expect(r.status).toBe(1);
    expect(r.out).toContain('0003-c.md: status "maybe" is neither accepted nor superseded by NNNN');
    expect(r.out).toContain(
      "docs/decisions/README.md: the index is not the one the records give; run `pnpm decisions`",
    );
  });
});

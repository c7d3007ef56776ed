// The generators against their sources: the CLI reference against `poot --help` as the binary prints it, the
// decision index against docs/decisions, the benchmark JSON against the lines of BENCHMARKS.md it came from.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { leadingNumber, parseBenchmarks } from "../scripts/gen/bench.mjs";
import { cliModel } from "../scripts/gen/cli.mjs";
import { links, parseDecision } from "../scripts/gen/decisions.mjs";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));
const poot = (...args: string[]): string =>
  execFileSync(process.execPath, [join(REPO, "packages/cli/bin/poot.mjs"), ...args], { cwd: REPO, encoding: "utf8" });

describe("the CLI reference", () => {
  it("lists every command `poot --help` prints, each with the options its own --help prints", () => {
    const m = cliModel();
    // The "Commands:" section of the help, up to the next line that does not start with a space.
    const help = poot("--help")
      .split(/^Commands:\n/m)[1]!
      .split(/^\S/m)[0]!;
    const listed = [...help.matchAll(/^ {2}([a-z][\w-]*)(?: \[|\s+)/gm)].map((x) => x[1]).filter((n) => n !== "help");
    expect(m.commands.map((c: { name: string }) => c.name).sort()).toEqual(listed.sort());
    for (const c of m.commands as { name: string; options: { flags: string }[] }[]) {
      const own = poot(c.name, "--help");
      for (const o of c.options) expect(own, `poot ${c.name} --help lists ${o.flags}`).toContain(o.flags);
    }
  });
});

describe("the decision records", () => {
  it("parse every file of docs/decisions, with a status for each; a planted bad heading fails with the file's name", () => {
    const dir = join(REPO, "docs/decisions");
    const files = readdirSync(dir).filter((f) => /^\d{4}-.*\.md$/.test(f));
    const parsed = files.map((f) => parseDecision(f, readFileSync(join(dir, f), "utf8")));
    expect(parsed.map((p) => p.number)).toEqual(files.map((f) => f.slice(0, 4)));
    expect(parsed.find((p) => p.number === "0601")?.status).toMatch(/^superseded by \[0603\]/);
    expect(() => parseDecision("9999-x.md", "no heading\n")).toThrow(/docs\/decisions\/9999-x\.md: the first heading/);
  });

  it("rewrite links to records to site pages and keep other relative links as text", () => {
    expect(
      links("see [0603](0603-paged-kv-cache.md#pages) and [code](../../packages/x.ts) and [web](https://a.b/)"),
    ).toBe(
      "see [0603](/decisions/0603-paged-kv-cache/#pages) and code (`../../packages/x.ts`) and [web](https://a.b/)",
    );
  });
});

describe("the benchmark JSON", () => {
  it("holds every table row of BENCHMARKS.md, cell for cell, each number the one its cell starts with", () => {
    const text = readFileSync(join(REPO, "BENCHMARKS.md"), "utf8");
    const lines = new Set(text.split("\n").map((l) => l.trim()));
    type Section = { title: string; tables: { headers: string[]; rows: { text: string; value: number | null }[][] }[] };
    const sections = parseBenchmarks(text) as Section[];
    expect(sections.length).toBe((text.match(/^### /gm) ?? []).length);
    let rows = 0;
    for (const s of sections) {
      for (const t of s.tables) {
        for (const r of t.rows) {
          rows++;
          // The row's line in BENCHMARKS.md, rebuilt from the cells, is a line of the file.
          const line = `| ${r.map((c) => c.text).join(" | ")} |`;
          const found = [...lines].some((l) => l.replace(/\s*\|\s*/g, "|") === line.replace(/\s*\|\s*/g, "|"));
          expect(found, line).toBe(true);
        }
      }
    }
    const tableRows = text.split("\n").filter((l) => /^\|/.test(l.trim()) && !/^\|[\s:|-]+\|$/.test(l.trim())).length;
    const headers = sections.reduce((a, s) => a + s.tables.length, 0);
    expect(rows + headers).toBe(tableRows);
    expect([
      leadingNumber("16.55 (8.78)"),
      leadingNumber("**634.5** (1.576 ms)"),
      leadingNumber("—"),
      leadingNumber("1,324 MB"),
    ]).toEqual([16.55, 634.5, null, 1324]);
  });
});

#!/usr/bin/env node
// The decision-record check of `pnpm lint`: every docs/decisions/NNNN-*.md has a `Status:` line (accepted, or
// superseded by NNNN), and docs/decisions/README.md's table is the one generated from the records' titles and
// statuses (`pnpm decisions` rewrites it, so parallel branches never hand-merge the index).
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    root: { type: "string", default: resolve(dirname(fileURLToPath(import.meta.url)), "..") },
    write: { type: "boolean", default: false },
  },
});
const dir = join(resolve(values.root), "docs/decisions");
const indexFile = join(dir, "README.md");
const problems = [];

const HEADER = `# Decision records

One page per real choice: context, decision, consequences, and a \`Status:\` line (\`accepted\`, or
\`superseded by NNNN\`, possibly in part). Numbers are grouped by the issue that made the choice (0600-0699 for
issue 6, and so on). The table below is generated from the records' titles and status lines: after adding or
changing a record run \`pnpm decisions\`; \`pnpm lint\` fails when a record has no status or the table is stale.

| # | decision | status |
| --- | --- | --- |
`;

const records = existsSync(dir)
  ? readdirSync(dir)
      .filter((f) => /^\d{4}-.+\.md$/.test(f))
      .sort()
  : [];
const rows = [];
for (const f of records) {
  const text = readFileSync(join(dir, f), "utf8");
  const title = /^#\s*(\d{4})\s*[—:-]+\s*(.+)$/m.exec(text);
  const status = /^Status: (.+)$/m.exec(text);
  if (title === null) problems.push(`docs/decisions/${f}: first heading is not "# NNNN — title"`);
  if (status === null)
    problems.push(`docs/decisions/${f}: no "Status: accepted" (or "Status: superseded by NNNN") line`);
  else if (!/^(accepted|superseded by \[?\d{4})/.test(status[1]))
    problems.push(`docs/decisions/${f}: status "${status[1]}" is neither accepted nor superseded by NNNN`);
  if (title === null || status === null) continue;
  // The status cell keeps the record's words up to an explanatory " — …", with links reduced to their numbers.
  const cell = status[1].replace(/\s+—.*$/, "").replace(/\[(\d{4})\]\([^)]*\)/g, "$1");
  rows.push(`| [${title[1]}](${f}) | ${title[2].trim().replace(/\|/g, "\\|")} | ${cell} |`);
}
const want = `${HEADER}${rows.join("\n")}\n`;
if (values.write) {
  writeFileSync(indexFile, want);
  console.log(`check-decisions: wrote docs/decisions/README.md (${rows.length} records)`);
} else if (!existsSync(indexFile) || readFileSync(indexFile, "utf8") !== want) {
  problems.push("docs/decisions/README.md: the index is not the one the records give; run `pnpm decisions`");
}
for (const p of problems) console.error(`error decisions: ${p}`);
if (problems.length > 0) {
  console.error(`\ncheck-decisions: FAILED (${problems.length} problem(s))`);
  process.exit(1);
}
console.log(
  `check-decisions: ${records.length} decision records, each with a status, indexed in docs/decisions/README.md`,
);

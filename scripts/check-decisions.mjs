#!/usr/bin/env node
// The decision-record check of `pnpm lint`: every docs/decisions/NNNN-*.md has a `Status:` line (accepted, or
// superseded by NNNN) and a row in docs/decisions/README.md, and the index names no record that does not exist.
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { root: { type: "string", default: resolve(dirname(fileURLToPath(import.meta.url)), "..") } } });
const dir = join(resolve(values.root), "docs/decisions");
const problems = [];
const records = existsSync(dir) ? readdirSync(dir).filter((f) => /^\d{4}-.+\.md$/.test(f)).sort() : [];
const indexFile = join(dir, "README.md");
const index = existsSync(indexFile) ? readFileSync(indexFile, "utf8") : "";
if (index === "") problems.push("docs/decisions/README.md: missing (the index of decision records)");
for (const f of records) {
  const text = readFileSync(join(dir, f), "utf8");
  const status = /^Status: (.+)$/m.exec(text);
  if (status === null) problems.push(`docs/decisions/${f}: no "Status: accepted" (or "Status: superseded by NNNN") line`);
  else if (!/^(accepted|superseded by \[?\d{4})/.test(status[1])) problems.push(`docs/decisions/${f}: status "${status[1]}" is neither accepted nor superseded by NNNN`);
  if (index !== "" && !index.includes(`](${f})`)) problems.push(`docs/decisions/README.md: no row for ${f}`);
}
for (const m of index.matchAll(/\]\((\d{4}-[^)]+\.md)\)/g)) if (!records.includes(m[1])) problems.push(`docs/decisions/README.md: links ${m[1]}, which does not exist`);
for (const p of problems) console.error(`error decisions: ${p}`);
if (problems.length > 0) {
  console.error(`\ncheck-decisions: FAILED (${problems.length} problem(s))`);
  process.exit(1);
}
console.log(`check-decisions: ${records.length} decision records, each with a status and a row in the index`);

// BENCHMARKS.md as machine-readable JSON: each `###` result with its metadata lines (machine, date, command,
// baseline) and its Markdown tables; each table cell keeps its text and the number it starts with, so the site
// plots the figures as measured and recorded, never copies of them.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { GEN_DATA, REPO, write } from "./paths.mjs";

/** The leading number of a cell (`16.55 (8.78)` -> 16.55, `**634.5** (1.576 ms)` -> 634.5), or null. */
export function leadingNumber(text) {
  const m = /^[*_\s~≈]*(-?\d[\d,]*(?:\.\d+)?)/.exec(text);
  return m === null ? null : Number(m[1].replace(/,/g, ""));
}

const cells = (line) =>
  line
    .trim()
    .replace(/^\|/, "")
    .replace(/\|$/, "")
    .split("|")
    .map((c) => c.trim());

/** Parses BENCHMARKS.md text into sections with metadata and tables. */
export function parseBenchmarks(text) {
  const sections = [];
  let cur = null,
    table = null;
  for (const line of text.split("\n")) {
    const h = /^###\s+(.+)$/.exec(line);
    if (h !== null) {
      cur = { title: h[1].trim(), meta: {}, tables: [] };
      sections.push(cur);
      table = null;
      continue;
    }
    if (cur === null) continue;
    const meta = /^(machine|date|command|baseline|result):\s+(.+)$/.exec(line);
    if (meta !== null) cur.meta[meta[1]] = meta[2].trim();
    if (line.trim().startsWith("|")) {
      const row = cells(line);
      if (table === null) {
        table = { headers: row, rows: [] };
        cur.tables.push(table);
      } else if (!row.every((c) => /^:?-+:?$/.test(c))) {
        table.rows.push(row.map((t) => ({ text: t, value: leadingNumber(t) })));
      }
    } else table = null;
  }
  return sections;
}

/** Writes src/generated/benchmarks.json; returns the sections. */
export function generateBenchmarks() {
  const sections = parseBenchmarks(readFileSync(join(REPO, "BENCHMARKS.md"), "utf8"));
  write(join(GEN_DATA, "benchmarks.json"), JSON.stringify({ source: "BENCHMARKS.md", sections }));
  return sections;
}

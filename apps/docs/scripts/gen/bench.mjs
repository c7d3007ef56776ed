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

/**
 * The metrics the benchmark page charts: decode and prefill rates, dispatches per token, CUDA graph launches per token,
 * any other tok/s figure, and tokens per CPU-second (the rate least moved by other work on a shared machine).
 */
export function charted(metric, unit) {
  return (
    ["decodeTokS", "prefillTokS", "dispatchesPerToken", "graphLaunchesPerToken"].includes(metric) ||
    unit === "tok/s" ||
    unit === "tok/CPU-s"
  );
}

/**
 * Every figure the benchmark page must show for `results` ([{ file, result }], as @poot/testkit's readBenchResults
 * gives them): `<file>#<case>.<metric>` for each charted metric of each case, and `<file>#<case>.anchor.<metric>`
 * for its anchor's figure, each with the median the file records.
 */
export function expectedFigures(results) {
  const out = [];
  for (const { file, result } of results)
    for (const c of result.cases)
      for (const [m, f] of Object.entries(c.metrics)) {
        if (!charted(m, f.unit)) continue;
        out.push({ key: `${file}#${c.id}.${m}`, value: f.median });
        const a = c.anchorMetrics[m];
        if (a !== undefined) out.push({ key: `${file}#${c.id}.anchor.${m}`, value: a.median });
      }
  return out;
}

/**
 * The expected figures that a page does not show: `found` maps each `data-figure` key of the page to the number in
 * its `data-value`; a figure is missing when its key is absent or its number differs from the file's median.
 */
export function missingFigures(expected, found) {
  return expected
    .filter((e) => {
      const v = found[e.key];
      return v === undefined || Math.abs(v - e.value) > 1e-9 * Math.max(1, Math.abs(e.value));
    })
    .map((e) => `${e.key} = ${e.value}${found[e.key] === undefined ? " (absent)" : ` (page shows ${found[e.key]})`}`);
}

/** Writes src/generated/bench-results.json: every bench-results/*.json of the repository, checked; returns them. */
export async function generateBenchResults() {
  const { readBenchResults } = await import("@poot/testkit");
  const results = readBenchResults(join(REPO, "bench-results"));
  write(join(GEN_DATA, "bench-results.json"), JSON.stringify({ source: "bench-results/", results }));
  return results;
}

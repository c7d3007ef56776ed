// The decision records as pages, generated from docs/decisions/*.md, with an index of number, title and status.
// A record's status is its `Status:` line; records written before status lines existed read as accepted.
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { DOCS, REPO, cell, write } from "./paths.mjs";

const SRC = join(REPO, "docs/decisions");

/** Parses one record: number, title, status and body (without the H1). */
export function parseDecision(file, text) {
  const m = /^#\s+(\d{4})\s*(?:[—:-]+)\s*(.+)$/m.exec(text);
  if (m === null)
    throw new Error(`docs/decisions/${file}: the first heading is not "# NNNN — title" (or "# NNNN: title")`);
  const status = /^\**Status:?\**:?\s*(.+)$/im.exec(text)?.[1]?.trim() ?? null;
  // The status line is shown above the body, once.
  const body = text
    .slice(text.indexOf(m[0]) + m[0].length)
    .replace(/^\**Status:?\**:?\s*.+$/im, "")
    .trim();
  return { file, number: m[1], title: m[2].trim(), status, slug: file.replace(/\.md$/, ""), body };
}

/** Rewrites links between records to the site's pages; other repository-relative links point nowhere on the site. */
export function links(body) {
  return (
    body
      .replace(/\]\(((\d{4})-[^)#]+)\.md(#[^)]*)?\)/g, (_m, slug, _n, hash) => `](/decisions/${slug}/${hash ?? ""})`)
      // Other relative links (source files, READMEs) have no page on the site: keep their text, name the path.
      .replace(/\[([^\]]+)\]\((?!https?:|\/|#)([^)]+)\)/g, (_m, text, target) => `${text} (\`${target}\`)`)
  );
}

/** Writes src/content/docs/decisions/; returns the parsed records. */
export function generateDecisions() {
  const out = join(DOCS, "decisions");
  rmSync(out, { recursive: true, force: true });
  const records = readdirSync(SRC)
    .filter((f) => /^\d{4}-.*\.md$/.test(f))
    .sort()
    .map((f) => parseDecision(f, readFileSync(join(SRC, f), "utf8")));
  for (const r of records) {
    const fm = [
      "---",
      `title: ${JSON.stringify(`${r.number} — ${r.title}`)}`,
      `description: ${JSON.stringify(`Decision record ${r.number}: ${r.title}`)}`,
      "sidebar:",
      `  label: ${JSON.stringify(`${r.number} ${r.title}`.slice(0, 60))}`,
      "---",
      "",
    ];
    write(
      join(out, `${r.slug}.md`),
      fm.join("\n") +
        `\n*Status: ${links(r.status ?? "accepted")}* · source: \`docs/decisions/${r.file}\`\n\n${links(r.body)}\n`,
    );
  }
  const index = [
    "---",
    "title: Decision records",
    "description: Every design decision with its context, what was decided and its consequences.",
    "sidebar:",
    "  label: Index",
    "  order: 0",
    "---",
    "",
    `${records.length} records, generated from \`docs/decisions/*.md\`. A record with no \`Status:\` line predates`,
    "status lines and stands as accepted; a superseded record names its successor.",
    "",
    "| # | decision | status |",
    "| --- | --- | --- |",
    ...records.map(
      (r) => `| ${r.number} | [${cell(r.title)}](/decisions/${r.slug}/) | ${cell(links(r.status ?? "accepted"))} |`,
    ),
    "",
  ];
  write(join(out, "index.md"), index.join("\n"));
  return records;
}

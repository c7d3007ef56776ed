// docs/architecture.md, when the repository has one, as the page /architecture/design/ (its links to decision
// records rewritten to the site's pages, other relative links kept as text naming the path).
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { links } from "./decisions.mjs";
import { DOCS, REPO, write } from "./paths.mjs";

/** The repository's architecture document. */
export const ARCHITECTURE_DOC = join(REPO, "docs/architecture.md");

/** Writes src/content/docs/architecture/design.md from docs/architecture.md; false when there is none. */
export function generateArchitecture() {
  const out = join(DOCS, "architecture/design.md");
  rmSync(out, { force: true });
  if (!existsSync(ARCHITECTURE_DOC)) return false;
  const text = readFileSync(ARCHITECTURE_DOC, "utf8");
  const h1 = /^#\s+(.+)$/m.exec(text);
  const body = h1 === null ? text : text.slice(h1.index + h1[0].length);
  const title = `${h1?.[1]?.trim() ?? "Architecture"}: the design document`;
  write(
    out,
    `---\ntitle: ${JSON.stringify(title)}\ndescription: "The repository's architecture document (docs/architecture.md)."\n---\n\n${links(body.replace(/\]\(decisions\/README\.md\)/g, "](/decisions/)").replace(/\]\(decisions\//g, "](")).trim()}\n`,
  );
  return true;
}

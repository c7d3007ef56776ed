// Where the generators read from (the repository) and write to (ignored folders of the site).
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** apps/docs. */
export const SITE = fileURLToPath(new URL("../../", import.meta.url));
/** The repository root. */
export const REPO = join(SITE, "../..");
/** The content root; generated pages go to folders of it that git ignores (reference/cli.md, decisions/). */
export const DOCS = join(SITE, "src/content/docs");
/** Generated data the components import (ignored by git). */
export const GEN_DATA = join(SITE, "src/generated");
/** Generated static files served as they are (ignored by git). */
export const GEN_PUBLIC = join(SITE, "public/generated");

/** Writes `text` to `file`, creating its folder. */
export function write(file, text) {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
}

/** Escapes text for a Markdown table cell. */
export function cell(text) {
  return String(text ?? "")
    .replace(/\|/g, "\\|")
    .replace(/\n/g, " ");
}

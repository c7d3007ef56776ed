// The checks pack-install.test.ts runs on the published manifests and on the tree npm installs from them
// (issue #19, decision 1905): dependency ranges, peer ranges, engines, and what a package pulls in.
import * as fs from "node:fs";
import * as path from "node:path";
import semver from "semver";

/** The fields of a package.json these checks read. */
export interface Manifest {
  name?: string;
  version?: string;
  engines?: { node?: string };
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

/** `^x.y.z`: what a published dependency on a registry package looks like. */
const CARET = /^\^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/;
/** `>=x.y.z`: a peer (the user brings their own version). */
const AT_LEAST = /^>=\d+\.\d+\.\d+$/;

/**
 * Dependencies published with a narrower range than a caret, each for a reason (`.pnpmfile.cjs` BOUNDED):
 * light-my-request 6.8 moved to cookie@2, which declares engines node >=22.
 */
export const BOUNDED: Readonly<Record<string, RegExp>> = { "light-my-request": /^~6\.6\.\d+$/ };

/**
 * Every dependency spec of a published manifest that is not what it should be: `^x.y.z` in dependencies,
 * optionalDependencies and devDependencies (a BOUNDED name: its range), `>=x.y.z` in peerDependencies.
 * Returns `field name@spec` lines; empty = all good.
 */
export function rangeProblems(m: Manifest): string[] {
  const problems: string[] = [];
  for (const field of ["dependencies", "optionalDependencies", "devDependencies"] as const) {
    for (const [name, spec] of Object.entries(m[field] ?? {})) {
      const ok = BOUNDED[name]?.test(spec) ?? (CARET.test(spec) && semver.validRange(spec) !== null);
      if (!ok) problems.push(`${field} ${name}@${spec}`);
    }
  }
  for (const [name, spec] of Object.entries(m.peerDependencies ?? {})) {
    if (!AT_LEAST.test(spec)) problems.push(`peerDependencies ${name}@${spec}`);
  }
  return problems;
}

/** Every package.json under `nodeModules` (scoped and nested node_modules too), with its folder. */
export function installedManifests(nodeModules: string): { dir: string; manifest: Manifest }[] {
  const out: { dir: string; manifest: Manifest }[] = [];
  if (!fs.existsSync(nodeModules)) return out;
  for (const entry of fs.readdirSync(nodeModules)) {
    if (entry.startsWith(".")) continue;
    const dir = path.join(nodeModules, entry);
    if (entry.startsWith("@")) {
      out.push(...installedManifests(dir));
      continue;
    }
    const file = path.join(dir, "package.json");
    if (!fs.existsSync(file)) continue;
    out.push({ dir, manifest: JSON.parse(fs.readFileSync(file, "utf8")) as Manifest });
    out.push(...installedManifests(path.join(dir, "node_modules")));
  }
  return out;
}

/** The installed packages whose `engines.node` excludes `nodeVersion`: `name@version needs range` lines. */
export function engineProblems(manifests: readonly Manifest[], nodeVersion: string): string[] {
  return manifests
    .filter((m) => m.engines?.node !== undefined && !semver.satisfies(nodeVersion, m.engines.node))
    .map((m) => `${m.name}@${m.version} needs node ${m.engines?.node}`);
}

/** Names of the packages `root` pulls in through `dependencies` (not optional, not peers), root included. */
export function dependencyClosure(root: string, manifestOf: (name: string) => Manifest | undefined): string[] {
  const seen = new Set<string>();
  const queue = [root];
  for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
    if (seen.has(name)) continue;
    seen.add(name);
    queue.push(...Object.keys(manifestOf(name)?.dependencies ?? {}));
  }
  return [...seen].sort();
}

#!/usr/bin/env node
// The dependency-direction and import-cycle check of `pnpm lint` (docs/architecture.md, decision 0002).
// Source imports go through dependency-cruiser; package.json deps and tsconfig references are checked here.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const {
  NO_RUNTIME_DEPS,
  SCOPE,
  TEST_IMPORTS,
  TEST_ONLY,
  allowedFor,
  describeAllowed,
  workspaceFolders,
} = require("./layers.cjs");
const ts = require("typescript");

const { values } = parseArgs({ options: { root: { type: "string", default: repo } } });
const root = resolve(values.root);

/** Manifest problems: a package.json dependency or tsconfig reference outside the allowed set. */
function checkManifests(folders) {
  const problems = [];
  for (const folder of folders) {
    const allowed = allowedFor(folder);
    const self = folder.split("/")[1];
    if (allowed === undefined) {
      problems.push(`${folder}: not in the layer table (scripts/layers.cjs); add it there and to docs/architecture.md`);
      continue;
    }
    const may = describeAllowed(allowed);
    const pkgPath = join(root, folder, "package.json");
    if (existsSync(pkgPath)) {
      const pkg = JSON.parse(readFileSync(pkgPath, "utf8"));
      if (folder.startsWith("packages/") && pkg.name !== `${SCOPE}${self}`) {
        problems.push(`${folder}/package.json: name is ${JSON.stringify(pkg.name)}, expected "${SCOPE}${self}"`);
      }
      const runtimeDeps = Object.keys(pkg.dependencies ?? {});
      if (NO_RUNTIME_DEPS.includes(folder) && runtimeDeps.length > 0) {
        problems.push(`${folder}/package.json: must have no runtime dependencies, has ${runtimeDeps.join(", ")}`);
      }
      for (const field of ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"]) {
        for (const dep of Object.keys(pkg[field] ?? {})) {
          if (!dep.startsWith(SCOPE)) continue;
          const name = dep.slice(SCOPE.length);
          if (TEST_ONLY.includes(name) && name !== self) {
            if (field !== "devDependencies")
              problems.push(`${folder}/package.json: ${field} "${dep}" is test-only; declare it in devDependencies`);
            continue;
          }
          // A folder's test imports (TEST_IMPORTS) may be devDependencies, never runtime ones.
          const testImport = field === "devDependencies" && (TEST_IMPORTS[folder] ?? []).includes(name);
          if (name !== self && !allowed.has(name) && !testImport) {
            problems.push(`${folder}/package.json: ${field} "${dep}" is upward or sideways; ${folder} ${may}`);
          }
        }
      }
    }
    const tsPath = join(root, folder, "tsconfig.json");
    if (existsSync(tsPath)) {
      // tsconfig.json is JSONC (comments, trailing commas): read it with TypeScript's own reader.
      const { config, error } = ts.readConfigFile(tsPath, ts.sys.readFile);
      if (error)
        problems.push(
          `${folder}/tsconfig.json: cannot parse (${ts.flattenDiagnosticMessageText(error.messageText, " ")})`,
        );
      const refs = config?.references ?? [];
      for (const ref of refs) {
        const target = resolve(root, folder, ref.path)
          .slice(root.length + 1)
          .replace(/\\/g, "/");
        const name = target.startsWith("packages/") ? target.slice("packages/".length) : target;
        if (!allowed.has(name)) {
          problems.push(`${folder}/tsconfig.json: reference "${ref.path}" is upward or sideways; ${folder} ${may}`);
        }
      }
    }
  }
  return problems;
}

/** Runs dependency-cruiser over the source folders; returns its exit status (non-zero on a violation). */
function cruise(folders) {
  const roots = ["packages", "apps"].filter((d) => folders.some((f) => f.startsWith(`${d}/`)));
  if (roots.length === 0) return 0;
  // The CLI file is not in the package's exports; find it beside the resolved main entry.
  const main = fileURLToPath(import.meta.resolve("dependency-cruiser"));
  const bin = resolve(dirname(main), "../../bin/dependency-cruise.mjs");
  const config = join(repo, ".dependency-cruiser.cjs");
  const res = spawnSync(process.execPath, [bin, "--config", config, "--output-type", "err-long", ...roots], {
    cwd: root,
    stdio: "inherit",
  });
  return res.status ?? 1;
}

const folders = workspaceFolders(root);
const problems = checkManifests(folders);
for (const p of problems) console.error(`error manifest: ${p}`);
const cruiseStatus = cruise(folders);
if (problems.length > 0 || cruiseStatus !== 0) {
  console.error(
    `\ncheck-deps: FAILED (${problems.length} manifest problem(s), dependency-cruiser exit ${cruiseStatus})`,
  );
  process.exit(1);
}
console.log(
  `check-deps: ${folders.length} workspace folder(s) follow docs/architecture.md's direction, no import cycles`,
);

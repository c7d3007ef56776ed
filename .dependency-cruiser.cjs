// dependency-cruiser rules: the one direction of dependencies of docs/architecture.md and no import cycles.
// The layer table lives in scripts/layers.cjs; this file turns it into forbidden rules (decision 0002).
"use strict";

const path = require("node:path");
const {
  DIRECT,
  PACKAGES,
  TEST_IMPORTS,
  TEST_ONLY,
  allowedFor,
  describeAllowed,
  workspaceFolders,
} = require("./scripts/layers.cjs");

// The workspace whose folders are checked: the cwd depcruise runs in (the repo, or a planted copy in the lint test).
const root = process.cwd();

/** A path regex naming workspace packages however the import was resolved (source, symlink, bare). */
const toPackages = (names) => `(^packages/|@poot/)(${names.join("|")})(/|$)`;

/** One rule per known folder: everything outside its allowed set (and itself) is forbidden. */
const layerRules = Object.keys(DIRECT).flatMap((folder) => {
  const allowed = allowedFor(folder);
  const self = folder.startsWith("packages/") ? folder.slice("packages/".length) : undefined;
  const forbidden = PACKAGES.filter((p) => !allowed.has(p) && p !== self);
  if (forbidden.length === 0) return [];
  const rule = (name, from, names) => ({
    name,
    severity: "error",
    comment: `${folder} ${describeAllowed(allowed)} (docs/architecture.md: nothing imports upward or sideways).`,
    from,
    to: { path: toPackages(names) },
  });
  const testImports = TEST_IMPORTS[folder] ?? [];
  if (testImports.length === 0) return [rule(`layer:${folder}`, { path: `^${folder}/` }, forbidden)];
  // Tests may also import the folder's test-only imports (the runtime's oracle executor); sources may not.
  const tests = `^${folder}/(test/|.*\\.test\\.ts$)`;
  return [
    rule(`layer:${folder}`, { path: `^${folder}/`, pathNot: tests }, forbidden),
    rule(
      `layer:${folder}:tests`,
      { path: tests },
      forbidden.filter((p) => !testImports.includes(p)),
    ),
  ];
});

/** Folders on disk that the table does not know may import no workspace package until added to it. */
const unknownRules = workspaceFolders(root)
  .filter((folder) => DIRECT[folder] === undefined)
  .map((folder) => ({
    name: `layer:unknown:${folder}`,
    severity: "error",
    comment: `${folder} is not in the layer table (scripts/layers.cjs); add it there and to docs/architecture.md.`,
    from: { path: `^${folder}/` },
    to: { path: "(^packages/|^apps/|@poot/)", pathNot: `^${folder}/|@poot/${path.basename(folder)}$` },
  }));

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...layerRules,
    ...unknownRules,
    {
      name: "test-only",
      severity: "error",
      comment: `${TEST_ONLY.join(", ")} may be imported by tests, benches and scripts only, never by a package's sources (decision 1800).`,
      from: { path: "^packages/[^/]+/src/", pathNot: `\\.test\\.ts$|^packages/(${TEST_ONLY.join("|")})/` },
      to: { path: toPackages(TEST_ONLY) },
    },
    {
      name: "no-circular",
      severity: "error",
      comment: "Import cycle. A cycle that passes through an `import type` edge is allowed: it vanishes at run time.",
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ["type-only"] } },
    },
    {
      name: "graph-ir-no-runtime-deps",
      severity: "error",
      comment: "@poot/graph-ir is plain data with no runtime dependencies (CONVENTIONS 1).",
      from: { path: "^packages/graph-ir/src/", pathNot: "\\.test\\.ts$" },
      to: { dependencyTypes: ["npm", "npm-dev", "npm-optional", "npm-peer", "npm-no-pkg", "npm-unknown"] },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // node_modules is not excluded (that would drop the edges to npm packages), only not followed.
    exclude: { path: "(^|/)(dist|\\.tsbuild|\\.turbo|coverage)/" },
    // Type-only imports count for layering: a type from an upper layer is still an upward dependency.
    tsPreCompilationDeps: true,
    moduleSystems: ["es6", "cjs"],
    // No not-to-unresolvable rule: tsc already fails on a missing module, and a package's self-import
    // (`@poot/x` in x's own tests) does not resolve here; layering still matches it by its bare name.
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      // Resolve workspace packages to their sources, as vitest and tsc do, so cycles are seen across packages.
      conditionNames: ["source", "import", "require", "node", "default", "types"],
      extensions: [".ts", ".tsx", ".mts", ".js", ".mjs", ".cjs", ".json", ".d.ts"],
      mainFields: ["module", "main", "types"],
    },
  },
};

// The one direction of dependencies of docs/architecture.md as data: who may import whom, closed transitively.
// Read by .dependency-cruiser.cjs (source imports) and scripts/check-deps.mjs (package.json, tsconfig).
"use strict";

const fs = require("node:fs");
const path = require("node:path");

/** The backends of docs/architecture.md (and the reference backends, eval and interp); a backend never imports another. */
const BACKENDS = [
  "backend-reference",
  "backend-cpu",
  "backend-wgpu",
  "backend-vulkan",
  "backend-cuda",
  "backend-rocm",
  "backend-aie",
];

/**
 * Direct arrows of docs/architecture.md, keyed by workspace folder (`packages/<name>` or `apps/<name>`).
 * `"*"` means every workspace package (apps/docs reads everything).
 */
const DIRECT = {
  "packages/graph-ir": [],
  "packages/models": ["graph-ir"],
  "packages/kernel-dsl": ["graph-ir"],
  "packages/graph-plan": ["graph-ir"],
  "packages/kernelgen": ["graph-plan", "kernel-dsl"],
  "packages/codegen": ["kernel-dsl"],
  "packages/executor": ["graph-plan", "kernelgen", "codegen"],
  ...Object.fromEntries(BACKENDS.map((b) => [`packages/${b}`, ["executor"]])),
  "packages/runtime": ["models", "executor"],
  // Data only: the demo model's files and where they are.
  "packages/demo-model": [],
  // The HTTP server library: its sources import only the runtime; its tests run on the CPU and GPU backends.
  "packages/serve": ["runtime", ...BACKENDS],
  // The `poot` program: the serve command, the runtime and every backend (the GPU ones optional at run time).
  "packages/cli": ["serve", "runtime", "demo-model", ...BACKENDS],
  "apps/docs": ["*"],
  // Test-only (see TEST_ONLY): imports no workspace package.
  "packages/testkit": [],
};

/**
 * Test-only workspace packages (private, never published): any package's tests, benches and scripts may
 * import them, as devDependencies only; no non-test source file may (decision 1800).
 */
const TEST_ONLY = ["testkit"];

/**
 * Packages a folder's tests (`*.test.ts`, `test/`) may import beyond its arrows: the runtime is tested against the
 * reference backends (its oracle executor), which sit beside the device backends, not below the runtime.
 */
const TEST_IMPORTS = {
  "packages/runtime": ["backend-reference"],
  // The native kernel library is generated from the quant formats @poot/models describes (build script and test).
  "packages/backend-cpu": ["models"],
};

/** Every package name (folder under packages/) that the table knows, test-only ones aside. */
const PACKAGES = Object.keys(DIRECT)
  .filter((k) => k.startsWith("packages/"))
  .map((k) => k.slice("packages/".length))
  .filter((name) => !TEST_ONLY.includes(name));

/**
 * The packages `folder` may import: its direct arrows and, transitively, what those may import.
 * Returns undefined for a folder the table does not know (the check reports it).
 */
function allowedFor(folder) {
  const direct = DIRECT[folder];
  if (direct === undefined) return undefined;
  if (direct.includes("*")) return new Set(PACKAGES);
  const seen = new Set();
  const stack = [...direct];
  while (stack.length > 0) {
    const name = stack.pop();
    if (seen.has(name)) continue;
    seen.add(name);
    stack.push(...(DIRECT[`packages/${name}`] ?? []));
  }
  return seen;
}

/** "may import only a, b" or "may import no other workspace package", for messages. */
function describeAllowed(allowed) {
  return allowed.size ? `may import only ${[...allowed].sort().join(", ")}` : "may import no other workspace package";
}

/** Workspace folders (`packages/x`, `apps/y`) present under `root`, known to the table or not. */
function workspaceFolders(root) {
  return ["packages", "apps"].flatMap((dir) => {
    const abs = path.join(root, dir);
    if (!fs.existsSync(abs)) return [];
    return fs
      .readdirSync(abs, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => `${dir}/${d.name}`);
  });
}

/** Folders whose package.json may declare no runtime `dependencies` at all (CONVENTIONS 1: plain data). */
const NO_RUNTIME_DEPS = ["packages/graph-ir"];

/** The npm scope of every workspace package: `@poot/<folder name>`. */
const SCOPE = "@poot/";

module.exports = {
  BACKENDS,
  DIRECT,
  NO_RUNTIME_DEPS,
  PACKAGES,
  SCOPE,
  TEST_IMPORTS,
  TEST_ONLY,
  allowedFor,
  describeAllowed,
  workspaceFolders,
};

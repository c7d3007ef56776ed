// Tests of the dependency-direction and cycle check: planted violations in a temporary workspace fail,
// naming the offending files; the real tree and allowed (transitive) imports pass.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, test } from "vitest";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const checkDeps = join(repo, "scripts/check-deps.mjs");

/** A file tree: relative path -> contents. */
type Tree = Record<string, string>;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/**
 * Writes `tree` into a fresh temp workspace with node_modules/@poot links (as pnpm makes them), and
 * node_modules/<name> links to the real installed packages named in `npm`.
 */
function plant(tree: Tree, npm: string[] = []): string {
  const root = mkdtempSync(join(tmpdir(), "poot-lint-"));
  dirs.push(root);
  for (const [file, text] of Object.entries(tree)) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), text);
  }
  mkdirSync(join(root, "node_modules/@poot"), { recursive: true });
  for (const file of Object.keys(tree)) {
    const m = /^packages\/([^/]+)\/package\.json$/.exec(file);
    if (m) symlinkSync(join(root, "packages", m[1]!), join(root, "node_modules/@poot", m[1]!));
  }
  for (const name of npm)
    symlinkSync(realpathSync(join(repo, "packages/serve/node_modules", name)), join(root, "node_modules", name));
  return root;
}

/** A minimal package whose `source` export is src/index.ts, with the given index source. */
function pkg(name: string, index: string, deps: Record<string, string> = {}): Tree {
  const manifest = {
    name: `@poot/${name}`,
    type: "module",
    exports: { ".": { source: "./src/index.ts" } },
    dependencies: deps,
  };
  return {
    [`packages/${name}/package.json`]: JSON.stringify(manifest),
    [`packages/${name}/src/index.ts`]: index,
  };
}

/** Runs the check on `root`; returns exit status and all output. */
function check(root: string): { status: number | null; out: string } {
  const res = spawnSync(process.execPath, [checkDeps, "--root", root], { encoding: "utf8" });
  return { status: res.status, out: `${res.stdout}${res.stderr}` };
}

describe("check-deps", () => {
  test("the real tree passes", () => {
    const { status, out } = check(repo);
    expect(out).toContain("no import cycles");
    expect(status).toBe(0);
  });

  test("an upward import (graph-ir -> models) fails, naming both files", () => {
    const root = plant({
      ...pkg("graph-ir", 'import { m } from "@poot/models";\nexport const g = m;\n'),
      ...pkg("models", "export const m = 1;\n"),
    });
    const { status, out } = check(root);
    expect(status).toBe(1);
    expect(out).toContain("layer:packages/graph-ir");
    expect(out).toMatch(/packages\/graph-ir\/src\/index\.ts → packages\/models\/src\/index\.ts/);
  });

  test("an upward import hidden behind `import type` fails too", () => {
    const root = plant({
      ...pkg("graph-ir", 'import type { M } from "@poot/models";\nexport type G = M;\n'),
      ...pkg("models", "export type M = number;\n"),
    });
    const { status, out } = check(root);
    expect(status).toBe(1);
    expect(out).toMatch(/packages\/graph-ir\/src\/index\.ts → packages\/models\/src\/index\.ts/);
  });

  test("a backend importing another backend fails (sideways)", () => {
    const root = plant({
      ...pkg("backend-cpu", 'import { c } from "@poot/backend-cuda";\nexport const x = c;\n'),
      ...pkg("backend-cuda", "export const c = 1;\n"),
    });
    const { status, out } = check(root);
    expect(status).toBe(1);
    expect(out).toMatch(/packages\/backend-cpu\/src\/index\.ts → packages\/backend-cuda\/src\/index\.ts/);
  });

  test("the runtime's tests may import the reference backends; its sources may not (TEST_ONLY)", () => {
    const tree = {
      ...pkg("runtime", "export const r = 1;\n"),
      ...pkg("backend-reference", "export const e = 1;\n"),
      "packages/runtime/test/oracle.test.ts": 'import { e } from "@poot/backend-reference";\nexport const t = e;\n',
    };
    expect(check(plant(tree)).status).toBe(0);
    const planted = check(
      plant({
        ...tree,
        "packages/runtime/src/index.ts": 'import { e } from "@poot/backend-reference";\nexport const r = e;\n',
      }),
    );
    expect(planted.status).toBe(1);
    expect(planted.out).toMatch(/packages\/runtime\/src\/index\.ts → packages\/backend-reference\/src\/index\.ts/);
  });

  test("an unresolvable import of an upper package (no node_modules link) still fails", () => {
    const root = plant({ ...pkg("kernel-dsl", 'import { r } from "@poot/runtime";\nexport const k = r;\n') });
    const { status, out } = check(root);
    expect(status).toBe(1);
    expect(out).toContain("layer:packages/kernel-dsl");
    expect(out).toMatch(/packages\/kernel-dsl\/src\/index\.ts → @poot\/runtime/);
  });

  test("transitively-below imports pass: serve -> graph-ir, executor -> kernel-dsl", () => {
    const root = plant({
      ...pkg("serve", 'import { g } from "@poot/graph-ir";\nexport const s = g;\n', {
        "@poot/graph-ir": "workspace:*",
      }),
      ...pkg("executor", 'import { k } from "@poot/kernel-dsl";\nexport const e = k;\n'),
      ...pkg("kernel-dsl", 'import { g } from "@poot/graph-ir";\nexport const k = g;\n'),
      ...pkg("graph-ir", "export const g = 1;\n"),
    });
    const { status, out } = check(root);
    expect(out).toContain("no dependency violations");
    expect(status).toBe(0);
  });

  test("an import cycle inside a package fails, naming every file on it", () => {
    const root = plant({
      ...pkg("models", 'import { b } from "./b.js";\nexport const a = 1;\nexport const m = b;\n'),
      "packages/models/src/b.ts": 'import { a } from "./index.js";\nexport const b = a;\n',
    });
    const { status, out } = check(root);
    expect(status).toBe(1);
    expect(out).toContain("no-circular");
    expect(out).toMatch(
      /packages\/models\/src\/b\.ts →\s+packages\/models\/src\/index\.ts →\s+packages\/models\/src\/b\.ts/,
    );
  });

  test("a cycle broken by an `import type` edge passes", () => {
    const root = plant({
      ...pkg("models", 'import type { B } from "./b.js";\nexport const a = 1;\nexport type M = B;\n'),
      "packages/models/src/b.ts": 'import { a } from "./index.js";\nexport const b = a;\nexport type B = number;\n',
    });
    expect(check(root).status).toBe(0);
  });

  test("a cycle across packages fails (graph-plan <-> graph-ir)", () => {
    const root = plant({
      ...pkg("graph-ir", 'import { p } from "@poot/graph-plan";\nexport const g = 1;\nexport const q = p;\n'),
      ...pkg("graph-plan", 'import { g } from "@poot/graph-ir";\nexport const p = g;\n'),
    });
    const { status, out } = check(root);
    expect(status).toBe(1);
    expect(out).toContain("no-circular");
    expect(out).toContain("layer:packages/graph-ir");
  });

  test("an upward package.json dependency fails, naming the manifest", () => {
    const root = plant({
      ...pkg("codegen", "export const c = 1;\n", { "@poot/executor": "workspace:*" }),
      ...pkg("executor", "export const e = 1;\n"),
    });
    const { status, out } = check(root);
    expect(status).toBe(1);
    expect(out).toContain('packages/codegen/package.json: dependencies "@poot/executor" is upward or sideways');
  });

  test("graph-ir with a runtime dependency fails, in package.json and in its sources", () => {
    const root = plant(
      {
        ...pkg("graph-ir", 'import { Command } from "commander";\nexport const g = Command;\n', {
          commander: "14.0.3",
        }),
      },
      ["commander"],
    );
    const { status, out } = check(root);
    expect(status).toBe(1);
    expect(out).toContain("packages/graph-ir/package.json: must have no runtime dependencies, has commander");
    expect(out).toContain("graph-ir-no-runtime-deps");
  });

  test("an upward tsconfig reference fails", () => {
    const root = plant({
      ...pkg("models", "export const m = 1;\n"),
      // JSONC, as tsconfig files often are: a comment and a trailing comma.
      "packages/models/tsconfig.json":
        '{\n  // models sits above graph-ir only\n  "references": [{ "path": "../runtime" },],\n}\n',
    });
    const { status, out } = check(root);
    expect(status).toBe(1);
    expect(out).toContain('packages/models/tsconfig.json: reference "../runtime" is upward or sideways');
  });

  test("a package missing from the layer table fails", () => {
    const root = plant({ ...pkg("mystery", "export const x = 1;\n") });
    const { status, out } = check(root);
    expect(status).toBe(1);
    expect(out).toContain("packages/mystery: not in the layer table");
  });

  test("a source file importing the test-only @poot/testkit fails; a test file may", () => {
    const root = plant({
      ...pkg("testkit", "export const fixture = (p: string) => p;\n"),
      ...pkg("models", 'import { fixture } from "@poot/testkit";\nexport const m = fixture("x");\n'),
      "packages/models/test/a.test.ts": 'import { fixture } from "@poot/testkit";\nexport const t = fixture("y");\n',
    });
    const { status, out } = check(root);
    expect(status).toBe(1);
    expect(out).toContain("test-only");
    expect(out).toContain("packages/models/src/index.ts");
    expect(out).not.toContain("packages/models/test/a.test.ts");
  });

  test("@poot/testkit as a runtime dependency fails; as a devDependency it passes", () => {
    const bad = plant({
      ...pkg("testkit", "export const k = 1;\n"),
      ...pkg("graph-ir", "export const g = 1;\n", { "@poot/testkit": "workspace:*" }),
    });
    const r = check(bad);
    expect(r.status).toBe(1);
    expect(r.out).toContain(
      'packages/graph-ir/package.json: dependencies "@poot/testkit" is test-only; declare it in devDependencies',
    );
    const good = plant({
      ...pkg("testkit", "export const k = 1;\n"),
      "packages/graph-ir/package.json": JSON.stringify({
        name: "@poot/graph-ir",
        type: "module",
        exports: { ".": { source: "./src/index.ts" } },
        devDependencies: { "@poot/testkit": "workspace:*" },
      }),
      "packages/graph-ir/src/index.ts": "export const g = 1;\n",
    });
    expect(check(good).status).toBe(0);
  });
});

// The product as a user gets it (issue #19): every workspace package packed with pnpm, `@poot/cli` installed
// with npm from those tarballs alone into an empty folder (no workspace; third-party packages from the npm
// registry), then `poot run --prompt hi` (demo model, auto backend), `poot run org/name` from a prepared HF cache
// and `poot pull` against the fake Hub; then what a user of the packages meets besides the CLI: dependency and
// peer ranges (npm resolving beside older vitest and esbuild), engines, serve without backends, the .d.ts under
// `tsc` without skipLibCheck, pootc without esbuild. Slow (packing and npm installs): runs in CI (CI set) or with
// POOT_PACK_TEST=1, after `pnpm build`.
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import semver from "semver";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { npmInstall, packWorkspace } from "@poot/testkit";
import { COMMIT, REPO_FILES, startHubServer, type HubServer } from "./hub-server.js";
import {
  dependencyClosure,
  engineProblems,
  installedManifests,
  type Manifest,
  rangeProblems,
} from "./manifest-checks.js";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const demo = path.join(root, "models/demo");
const ENABLED = process.env["CI"] !== undefined || process.env["POOT_PACK_TEST"] === "1";
const JS_FRAME = /^\s+at .*\.(m?js|ts|cjs):\d+/m;

let work: string;
let hub: HubServer;
/** Each package's package.json as packed (read from its tarball), by name. */
const packed = new Map<string, Manifest>();
/** Each package's tarball, by name. */
const tarballOf = new Map<string, string>();

function run(cmd: string, args: readonly string[], cwd: string): { status: number | null; out: string } {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8" });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** `npm install --dry-run` (resolution only: npm's ERESOLVE, no download of tarballs) in a fresh folder. */
function npmResolves(specs: readonly string[]): { status: number | null; out: string } {
  const dir = fs.mkdtempSync(path.join(work, "resolve-"));
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "poot-resolve-test", private: true }));
  return run("npm", ["install", "--dry-run", "--no-audit", "--no-fund", "--loglevel=error", ...specs], dir);
}

async function poot(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(path.join(work, "app/node_modules/.bin/poot"), args, {
    cwd: work,
    env: { ...process.env, HF_HOME: path.join(work, "hf"), HF_HUB_CACHE: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => void (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => void (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  expect(err).not.toMatch(JS_FRAME);
  return { code, out, err };
}

describe.skipIf(!ENABLED)("@poot/cli installed with npm from the packed tarballs (CI or POOT_PACK_TEST=1)", () => {
  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), "poot-pack-"));
    const files = packWorkspace(path.join(work, "tarballs"));
    for (const file of files) {
      const r = run("tar", ["-xzOf", file, "package/package.json"], work);
      if (r.status !== 0) throw new Error(`reading package.json from ${file} failed: ${r.out}`);
      const manifest = JSON.parse(r.out) as Manifest;
      packed.set(manifest.name ?? file, manifest);
      tarballOf.set(manifest.name ?? file, file);
    }
    npmInstall(path.join(work, "app"), files);
    hub = await startHubServer(demo);
  }, 600_000);
  afterAll(async () => {
    await hub?.close();
    // Removing the installed tree (koffi's and Dawn's prebuilt binaries) takes more than 10 s on a busy machine.
    if (work !== undefined) fs.rmSync(work, { recursive: true, force: true });
  }, 120_000);

  test("no tarball carries tsbuildinfo or test files; every one has LICENSE and repository", () => {
    const inst = path.join(work, "app/node_modules/@poot");
    for (const pkg of fs.readdirSync(inst)) {
      const files = fs.readdirSync(path.join(inst, pkg), { recursive: true }) as string[];
      expect(
        files.filter((f) => f.endsWith(".tsbuildinfo") || /\.test\.(js|ts|d\.ts)$/.test(f)),
        pkg,
      ).toEqual([]);
      expect(files, pkg).toContain("LICENSE");
      expect(
        (JSON.parse(fs.readFileSync(path.join(inst, pkg, "package.json"), "utf8")) as { repository?: unknown })
          .repository,
        pkg,
      ).toBeDefined();
    }
  });

  test("poot run --prompt hi: the demo model on the auto backend", { timeout: 180_000 }, async () => {
    const r = await poot(["run", "--prompt", "hi", "-n", "8"]);
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/tok\/s \[auto: (cuda|vulkan|wgpu|cpu)\]\n$/);
  });

  test("poot run org/name from a prepared HF cache", { timeout: 180_000 }, async () => {
    const repo = path.join(work, "prepared/models--acme--demo");
    fs.mkdirSync(path.join(repo, "snapshots", COMMIT), { recursive: true });
    fs.mkdirSync(path.join(repo, "refs"));
    fs.writeFileSync(path.join(repo, "refs/main"), COMMIT);
    for (const f of REPO_FILES) fs.copyFileSync(path.join(demo, f), path.join(repo, "snapshots", COMMIT, f));
    const r = await poot(["run", "acme/demo", "-p", "hi", "-n", "8"], { HF_HUB_CACHE: path.join(work, "prepared") });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/generated \d+ tokens/);
  });

  test("poot pull against the local Hub server", { timeout: 180_000 }, async () => {
    const r = await poot(["pull", "poot/demo"], { HF_ENDPOINT: hub.url });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toContain("poot pull: poot/demo@main");
    expect(fs.existsSync(path.join(work, "hf/hub/models--poot--demo/snapshots", COMMIT, "model.safetensors"))).toBe(
      true,
    );
  });

  test("published ranges: ^x.y.z for dependencies (workspace and catalog alike), >=x.y.z for peers", () => {
    expect([...packed.keys()].sort()).toContain("@poot/cli");
    for (const [name, m] of packed) {
      expect(rangeProblems(m), name).toEqual([]);
      // workspace:^ -> ^<the version of that package>
      for (const [dep, spec] of Object.entries({ ...m.dependencies, ...m.optionalDependencies })) {
        const internal = packed.get(dep);
        if (internal !== undefined) expect(spec, `${name} -> ${dep}`).toBe(`^${internal.version}`);
      }
    }
    // Planted: the catalog's exact pin as pnpm writes it without the hook, and an exact peer.
    const cli = packed.get("@poot/cli");
    const executor = packed.get("@poot/executor");
    expect(rangeProblems({ ...cli, dependencies: { ...cli?.dependencies, commander: "14.0.3" } })).toEqual([
      "dependencies commander@14.0.3",
    ]);
    expect(rangeProblems({ ...executor, peerDependencies: { vitest: "4.1.12" } })).toEqual([
      "peerDependencies vitest@4.1.12",
    ]);
  });

  test("peers are loose: npm resolves the packages beside vitest 3 and esbuild 0.21", { timeout: 300_000 }, () => {
    const neighbours = ["vitest@3.2.4", "esbuild@0.21.5"];
    const ok = npmResolves([...tarballOf.values(), ...neighbours]);
    expect(ok.out).not.toContain("ERESOLVE");
    expect(ok.status, ok.out).toBe(0);
    // Planted: @poot/executor with its vitest peer pinned exactly, as it was published before.
    const planted = path.join(work, "planted-executor");
    fs.mkdirSync(planted);
    expect(run("tar", ["-xzf", tarballOf.get("@poot/executor") ?? "", "-C", planted], work).status).toBe(0);
    const file = path.join(planted, "package/package.json");
    const m = JSON.parse(fs.readFileSync(file, "utf8")) as Manifest;
    fs.writeFileSync(file, JSON.stringify({ ...m, peerDependencies: { vitest: "4.1.12" } }));
    expect(run("tar", ["-czf", "executor.tgz", "package"], planted).status).toBe(0);
    const others = [...tarballOf].filter(([name]) => name !== "@poot/executor").map(([, f]) => f);
    const bad = npmResolves([path.join(planted, "executor.tgz"), ...others, ...neighbours]);
    expect(bad.status).not.toBe(0);
    expect(bad.out).toContain("ERESOLVE");
  });

  test("engines: every installed package admits this Node and the oldest our engines allow", () => {
    const manifests = installedManifests(path.join(work, "app/node_modules")).map((i) => i.manifest);
    expect(manifests.length).toBeGreaterThan(50);
    const oldest = semver.minVersion(packed.get("@poot/cli")?.engines?.node ?? "")?.version;
    expect(oldest).toBe("20.19.0");
    for (const version of [process.version, oldest ?? ""])
      expect(engineProblems(manifests, version), version).toEqual([]);
    // fastify's light-my-request is held at 6.6 (cookie@1); 6.8 would bring cookie@2 (node >=22).
    expect(manifests.filter((m) => m.name === "cookie").map((m) => m.version)).toEqual([expect.stringMatching(/^1\./)]);
    // Planted: cookie@2's own engines.
    expect(engineProblems([{ name: "cookie", version: "2.0.2", engines: { node: ">=22" } }], "v20.20.0")).toEqual([
      "cookie@2.0.2 needs node >=22",
    ]);
  });

  test("@poot/serve pulls in no backend; the CLI has the CPU one and the GPU ones as optional", () => {
    const manifestOf = (name: string) => packed.get(name);
    const serve = dependencyClosure("@poot/serve", manifestOf);
    expect(serve).toContain("@poot/runtime");
    expect(serve.filter((n) => n.startsWith("@poot/backend-"))).toEqual([]);
    // The walker sees backends where they are (the planted side).
    expect(dependencyClosure("@poot/cli", manifestOf).filter((n) => n.startsWith("@poot/backend-"))).toEqual([
      "@poot/backend-cpu",
      "@poot/backend-reference",
    ]);
    expect(Object.keys(packed.get("@poot/cli")?.optionalDependencies ?? {}).sort()).toEqual([
      "@poot/backend-cuda",
      "@poot/backend-rocm",
      "@poot/backend-vulkan",
      "@poot/backend-wgpu",
      "webgpu",
    ]);
  });

  // Type-checking every declaration file (fastify's and pino's included) takes about a minute on a busy machine.
  test("tsc --noEmit, strict, skipLibCheck false: a file importing every export of every package", {
    timeout: 300_000,
  }, () => {
    const app = path.join(work, "app");
    const specs: string[] = [];
    for (const [name, m] of packed) {
      const exportsMap = (m as { exports?: Record<string, unknown> }).exports ?? { ".": {} };
      for (const key of Object.keys(exportsMap)) if (!key.endsWith(".json")) specs.push(`${name}${key.slice(1)}`);
    }
    expect(specs).toContain("@poot/backend-wgpu/executor");
    fs.writeFileSync(
      path.join(app, "all.ts"),
      specs.map((s, i) => `import * as m${i} from "${s}";\nexport { m${i} };\n`).join(""),
    );
    // A TypeScript user has typescript and @types/node: the workspace's, nothing else (no ambient GPU types).
    const tsconfig = (files: string[]) => ({
      compilerOptions: {
        strict: true,
        skipLibCheck: false,
        noEmit: true,
        target: "es2022",
        module: "nodenext",
        moduleResolution: "nodenext",
        typeRoots: [path.join(root, "node_modules/@types")],
        types: ["node"],
      },
      files,
    });
    const tsc = path.join(root, "node_modules/.bin/tsc");
    fs.writeFileSync(path.join(app, "tsconfig.all.json"), JSON.stringify(tsconfig(["all.ts"])));
    const r = run(tsc, ["-p", "tsconfig.all.json"], app);
    expect(r.out).toBe("");
    expect(r.status).toBe(0);
    // Planted: a declaration using WebGPU's globals without referencing @webgpu/types fails under this config.
    const planted = path.join(app, "node_modules/planted-gpu");
    fs.mkdirSync(planted);
    fs.writeFileSync(path.join(planted, "package.json"), JSON.stringify({ name: "planted-gpu", types: "index.d.ts" }));
    fs.writeFileSync(path.join(planted, "index.d.ts"), "export declare function open(d: GPUDevice): GPUBuffer;\n");
    fs.writeFileSync(path.join(app, "planted.ts"), 'export * from "planted-gpu";\n');
    fs.writeFileSync(path.join(app, "tsconfig.planted.json"), JSON.stringify(tsconfig(["planted.ts"])));
    const bad = run(tsc, ["-p", "tsconfig.planted.json"], app);
    expect(bad.status).not.toBe(0);
    expect(bad.out).toContain("Cannot find name 'GPUDevice'");
  });

  test("esbuild is not installed with @poot/kernel-dsl; pootc without it says so in one line", async () => {
    expect(fs.existsSync(path.join(work, "app/node_modules/esbuild"))).toBe(false);
    expect(packed.get("@poot/kernel-dsl")?.dependencies?.["esbuild"]).toBeUndefined();
    const src = path.join(work, "kernels");
    fs.mkdirSync(src);
    fs.writeFileSync(path.join(src, "k.ts"), "export const notAKernel = 1;\n");
    const child = spawnSync(path.join(work, "app/node_modules/.bin/pootc"), [src, "--out", path.join(work, "kir")], {
      encoding: "utf8",
    });
    expect(child.status).toBe(1);
    expect(child.stderr).toBe(
      "pootc needs esbuild to bundle kernel sources, and it is not installed: npm install --save-dev esbuild\n",
    );
  });
});

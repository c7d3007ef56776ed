// The product as a user gets it (issue #19): every workspace package packed with pnpm, `@poot/cli` installed
// with npm from those tarballs alone into an empty folder (no workspace; third-party packages from the npm
// registry), then `poot run --prompt hi` (demo model, auto backend), `poot run org/name` from a prepared HF cache
// and `poot pull` against the fake Hub. Slow (packing and an npm install): runs in CI (CI set) or with
// POOT_PACK_TEST=1, after `pnpm build`.
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { COMMIT, REPO_FILES, startHubServer, type HubServer } from "./hub-server.js";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const demo = path.join(root, "models/demo");
const ENABLED = process.env["CI"] !== undefined || process.env["POOT_PACK_TEST"] === "1";
const JS_FRAME = /^\s+at .*\.(m?js|ts|cjs):\d+/m;

let work: string;
let hub: HubServer;

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
    const tarballs = path.join(work, "tarballs");
    fs.mkdirSync(tarballs);
    for (const pkg of fs.readdirSync(path.join(root, "packages"))) {
      const dir = path.join(root, "packages", pkg);
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { private?: boolean };
      if (manifest.private === true) continue;
      const r = spawnSync("pnpm", ["pack", "--pack-destination", tarballs], { cwd: dir, encoding: "utf8" });
      if (r.status !== 0) throw new Error(`pnpm pack in packages/${pkg} failed: ${r.stderr}`);
    }
    const app = path.join(work, "app");
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "poot-pack-test", private: true }));
    const files = fs.readdirSync(tarballs).map((f) => path.join(tarballs, f));
    const r = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", ...files], {
      cwd: app,
      encoding: "utf8",
    });
    if (r.status !== 0) throw new Error(`npm install of the tarballs failed: ${r.stderr}`);
    hub = await startHubServer(demo);
  }, 600_000);
  afterAll(async () => {
    await hub?.close();
    if (work !== undefined) fs.rmSync(work, { recursive: true, force: true });
  });

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
});

// `poot pull`, `poot run org/name` and `poot list` through the real bin against a fake Hub on 127.0.0.1
// (test/hub-server.ts, HF_ENDPOINT): the cache layout huggingface_hub writes, resume after a dropped connection,
// 401 / 404 / a corrupted file as one-line errors, and the pulled model's greedy text equal to transformers'.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { COMMIT, REPO_FILES, startHubServer, type HubServer } from "./hub-server.js";

const pkgDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const bin = path.join(pkgDir, "bin/poot.mjs");
const demo = path.join(pkgDir, "../../models/demo");
const JS_FRAME = /^\s+at .*\.(m?js|ts|cjs):\d+/m;

let hub: HubServer;
let home: string;

/** Runs the bin without blocking this process's event loop (the fake Hub answers from it). */
async function poot(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [bin, ...args], {
    env: { ...process.env, HF_ENDPOINT: hub.url, HF_HOME: home, HF_HUB_CACHE: "", HF_TOKEN: "", ...env },
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

const repoDir = (id: string) => path.join(home, "hub", `models--${id.replace("/", "--")}`);
const sha256 = (file: string) => createHash("sha256").update(fs.readFileSync(file)).digest("hex");

beforeAll(async () => {
  hub = await startHubServer(demo);
  home = fs.mkdtempSync(path.join(os.tmpdir(), "poot-hf-home-"));
});
afterAll(async () => {
  await hub.close();
  fs.rmSync(home, { recursive: true, force: true });
});

describe("poot pull against a local Hub", () => {
  test("downloads into $HF_HOME/hub in huggingface_hub's layout, resuming the dropped connection", {
    timeout: 240_000,
  }, async () => {
    const r = await poot(["pull", "poot/demo"]);
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(
      /^poot pull: poot\/demo@main \(0123456789ab\): 5 files, 15\.\d MB \(5 downloaded, 0 cached\)/,
    );
    // The first transfer of the LFS file dropped after at most 1 MiB (a reset may discard bytes not yet delivered);
    // the client resumed it with a Range request from where its file ended.
    const resumed = new RegExp(`^GET /poot/demo/resolve/${COMMIT}/model\\.safetensors bytes=[1-9]\\d*-$`);
    expect(
      hub.log.filter((l) => resumed.test(l)),
      hub.log.join("\n"),
    ).toHaveLength(1);
    const dir = repoDir("poot/demo");
    expect(fs.readFileSync(path.join(dir, "refs", "main"), "utf8")).toBe(COMMIT);
    for (const f of REPO_FILES) {
      const link = path.join(dir, "snapshots", COMMIT, f);
      expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
      expect(fs.readlinkSync(link)).toMatch(/^\.\.\/\.\.\/blobs\/[0-9a-f]{40,64}$/);
      // The contents are the source file's, byte for byte (sha256 of both, computed here).
      expect(sha256(link)).toBe(sha256(path.join(demo, f)));
    }
    // The LFS file's blob is named by its sha256, as the Hub's etag and huggingface_hub name it.
    expect(fs.existsSync(path.join(dir, "blobs", sha256(path.join(demo, "model.safetensors"))))).toBe(true);
    expect(fs.readdirSync(path.join(dir, "blobs")).filter((b) => b.endsWith(".incomplete"))).toEqual([]);
  });

  test("a second pull downloads nothing", { timeout: 120_000 }, async () => {
    const before = hub.log.length;
    const r = await poot(["pull", "poot/demo"]);
    expect(r.code).toBe(0);
    expect(r.err).toContain("(0 downloaded, 5 cached)");
    expect(hub.log.slice(before).filter((l) => l.includes("/resolve/"))).toEqual([]);
  });

  test("poot run org/name runs the cached snapshot: greedy text equals transformers'", {
    timeout: 240_000,
  }, async () => {
    const ref = JSON.parse(fs.readFileSync(path.join(demo, "reference.json"), "utf8")) as {
      prompt: string;
      greedy_ids: number[];
      greedy_text: string;
    };
    const r = await poot([
      "run",
      "poot/demo",
      "--prompt",
      ref.prompt,
      "--temperature",
      "0",
      "--max-tokens",
      String(ref.greedy_ids.length),
      "--ignore-eos",
    ]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe(`${ref.greedy_text}\n`);
    // HF_HUB_CACHE wins over HF_HOME.
    const other = fs.mkdtempSync(path.join(os.tmpdir(), "poot-hub-cache-"));
    const missing = await poot(["run", "poot/demo", "--prompt", "hi"], { HF_HUB_CACHE: other });
    expect(missing.code).toBe(1);
    expect(missing.err.trim()).toBe(
      `poot: poot/demo is neither a path nor in the Hugging Face cache (${other}); download it with \`poot pull poot/demo\``,
    );
    fs.rmSync(other, { recursive: true });
  });

  test("poot list shows the cached model with its size", async () => {
    const r = await poot(["list"]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^poot\/demo\s+15\.\d MB\s+5 files\s+main=01234567\n$/);
  });

  test("--include fetches only the matching files", { timeout: 120_000 }, async () => {
    const r = await poot(["pull", "poot/private", "--include", "*.json"], { HF_TOKEN: "secret" });
    expect(r.code, r.err).toBe(0);
    expect(fs.readdirSync(path.join(repoDir("poot/private"), "snapshots", COMMIT)).sort()).toEqual([
      "config.json",
      "generation_config.json",
      "tokenizer.json",
      "tokenizer_config.json",
    ]);
  });

  test.each([
    [
      ["pull", "poot/private"],
      {},
      /^poot: cannot list poot\/private: HTTP 401 \(poot\/private is gated or private\); set HF_TOKEN to a token with access$/,
    ],
    [
      ["pull", "poot/private"],
      { HF_TOKEN: "wrong" },
      /^poot: cannot list poot\/private: HTTP 401 .*HF_TOKEN was sent and refused/,
    ],
    [
      ["pull", "poot/nothing"],
      {},
      /^poot: cannot list poot\/nothing: HTTP 404: no repo poot\/nothing at revision main on http:\/\/127\.0\.0\.1:\d+ \(check the name and --revision\)$/,
    ],
    [["pull", "poot/demo", "--revision", "v9"], {}, /HTTP 404: no repo poot\/demo at revision v9/],
    [
      ["pull", "poot/corrupt"],
      {},
      /^poot: tokenizer\.json is corrupted: its git sha1 is [0-9a-f]{40}, the Hub says [0-9a-f]{40}; the partial file was removed, run `poot pull` again$/,
    ],
    [["pull", "not a repo"], {}, /^poot: "not a repo" is not a Hub repo id \(org\/name\)$/],
    [
      ["pull", "poot/demo"],
      { HF_ENDPOINT: "http://127.0.0.1:9" },
      /^poot: cannot reach http:\/\/127\.0\.0\.1:9 .*HF_ENDPOINT$/,
    ],
  ] as [string[], Record<string, string>, RegExp][])(
    "%j %j: one line, exit 1",
    { timeout: 120_000 },
    async (args, env, says) => {
      const r = await poot(args, env);
      expect(r.code).toBe(1);
      expect(r.err.trimEnd().split("\n")).toHaveLength(1);
      expect(r.err.trimEnd()).toMatch(says);
    },
  );

  test("the corrupted file left no blob behind", () => {
    const blobs = path.join(repoDir("poot/corrupt"), "blobs");
    const tok = createHash("sha1")
      .update(`blob ${fs.statSync(path.join(demo, "tokenizer.json")).size}\0`)
      .update(fs.readFileSync(path.join(demo, "tokenizer.json")))
      .digest("hex");
    expect(fs.existsSync(path.join(blobs, tok))).toBe(false);
    expect(fs.existsSync(path.join(blobs, `${tok}.incomplete`))).toBe(false);
  });
});

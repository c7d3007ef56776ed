// Fixtures the repository does not store (fixtures/generated.json): the project's own GGUF writer regenerates
// them from the HF weights beside them (packages/models/scripts/make-fixture-ggufs.ts, run as a child process so
// that this package depends on no other), into their place under fixtures/ (git-ignored), once per clone. Every
// process checks each file it hands out against the recorded sha256 of the original, once.
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { FixtureError } from "./errors.js";
import { FIXTURES_ROOT, REPO_ROOT } from "./root.js";

interface Entry {
  readonly path: string;
  readonly sha256: string;
}

let entries: readonly Entry[] | undefined;
const verified = new Set<string>();
let first = true;

function list(): readonly Entry[] {
  if (entries === undefined) {
    const file = path.join(FIXTURES_ROOT, "generated.json");
    entries = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, "utf8")) as { files: Entry[] }).files : [];
  }
  return entries;
}

function sha256Of(file: string): string | undefined {
  return fs.existsSync(file) ? createHash("sha256").update(fs.readFileSync(file)).digest("hex") : undefined;
}

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Runs the regenerator for `paths` under a lock file, so parallel test workers make each file once. */
function regenerate(paths: readonly string[]): void {
  const lock = path.join(FIXTURES_ROOT, ".regenerate.lock");
  const started = Date.now();
  for (;;) {
    try {
      fs.closeSync(fs.openSync(lock, "wx"));
      break;
    } catch {
      // Another worker is regenerating: wait for it, then look again (it may have made ours). A lock older
      // than two minutes was left by a killed run (regenerating takes seconds): take it over.
      if (Date.now() - started > 300_000)
        throw new FixtureError("regenerate", `waited 5 min for ${lock}: delete it if no test run is active`);
      const age = fs.existsSync(lock) ? Date.now() - fs.statSync(lock).mtimeMs : 0;
      if (age > 120_000) fs.rmSync(lock, { force: true });
      sleep(200);
      if (paths.every((p) => fs.existsSync(path.join(FIXTURES_ROOT, p)))) return;
    }
  }
  try {
    const runTs = path.join(REPO_ROOT, "packages/models/scripts/run-ts.mjs");
    const script = path.join(REPO_ROOT, "packages/models/scripts/make-fixture-ggufs.ts");
    execFileSync(process.execPath, [runTs, script, FIXTURES_ROOT, ...paths], {
      cwd: REPO_ROOT,
      stdio: ["ignore", "ignore", "pipe"],
    });
  } catch (e) {
    const err = e as { stderr?: Buffer; message: string };
    const why = err.stderr?.toString().trim().split("\n").pop() ?? err.message;
    throw new FixtureError("regenerate", `cannot regenerate ${paths.map((p) => `fixtures/${p}`).join(", ")}: ${why}`);
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

/**
 * Makes sure every generated fixture at or under `rel` exists and matches its recorded sha256, regenerating
 * the ones that are absent or differ.
 */
export function ensureGenerated(rel: string): void {
  // The first call in a process covers every generated file, not only those under `rel`: a test may locate one
  // file (a folder's reference.json) and then read its neighbours (the folder's model.safetensors) by path.
  const all = first;
  first = false;
  const want = list().filter(
    (e) => !verified.has(e.path) && (all || rel === "" || e.path === rel || e.path.startsWith(`${rel}/`)),
  );
  if (want.length === 0) return;
  const stale = want.filter((e) => sha256Of(path.join(FIXTURES_ROOT, e.path)) !== e.sha256);
  // One child process per run, not per file: make every absent generated file along with the stale ones.
  const absent = list().filter((e) => !stale.includes(e) && !fs.existsSync(path.join(FIXTURES_ROOT, e.path)));
  if (stale.length > 0) regenerate([...stale, ...absent].map((e) => e.path));
  for (const e of stale) {
    const got = sha256Of(path.join(FIXTURES_ROOT, e.path));
    if (got !== e.sha256)
      throw new FixtureError(
        "regenerate",
        `fixtures/${e.path}: sha256 ${got ?? "(absent)"} after regeneration, recorded ${e.sha256}`,
      );
  }
  for (const e of want) verified.add(e.path);
}

// The Hugging Face hub cache as huggingface_hub lays it out, shared with Python tools:
//   <cache>/models--<org>--<name>/refs/<revision>   the commit a branch or tag points to
//   <cache>/models--<org>--<name>/snapshots/<commit>/<path>  -> ../../blobs/<etag> (relative symlinks)
//   <cache>/models--<org>--<name>/blobs/<etag>       the file contents, named by git oid or LFS sha256
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { CliError } from "../errors.js";

/** A Hugging Face repo id: `org/name` (letters, digits, `-`, `_`, `.`). */
export const REPO_ID = /^[A-Za-z0-9][\w.-]*\/[\w.-]+$/;

/** The hub cache folder: `HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub` (the CLI's env). */
export function hubCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env["HF_HUB_CACHE"]) return env["HF_HUB_CACHE"];
  if (env["HF_HOME"]) return path.join(env["HF_HOME"], "hub");
  return path.join(os.homedir(), ".cache", "huggingface", "hub");
}

/** The folder of repo `org/name` in the cache. */
export function repoFolder(cache: string, repoId: string): string {
  return path.join(cache, `models--${repoId.split("/").join("--")}`);
}

/** The snapshot folder of `revision` (a branch, tag or commit), or null when the cache does not have it. */
export function snapshotDir(cache: string, repoId: string, revision = "main"): string | null {
  const repo = repoFolder(cache, repoId);
  let commit = revision;
  const ref = path.join(repo, "refs", revision);
  if (fs.existsSync(ref)) commit = fs.readFileSync(ref, "utf8").trim();
  const dir = path.join(repo, "snapshots", commit);
  return fs.existsSync(dir) ? dir : null;
}

/** What a snapshot (or any folder) holds for the loaders: the folder itself (config.json), else its one .gguf. */
export function modelInFolder(dir: string): string | null {
  if (fs.existsSync(path.join(dir, "config.json"))) return dir;
  const ggufs = fs.readdirSync(dir).filter((f) => f.toLowerCase().endsWith(".gguf"));
  return ggufs.length === 1 ? path.join(dir, ggufs[0]!) : null;
}

/**
 * Resolves what the user typed as MODEL: an existing path as given; `org/name` from the hub cache (`refs/main`
 * -> snapshot); else a CliError saying how to get it. `demo` is resolved by the caller (the bundled model).
 */
export function resolveModelName(arg: string, cache: string, command: string): string {
  if (fs.existsSync(arg) || !REPO_ID.test(arg)) return arg;
  const snap = snapshotDir(cache, arg);
  if (snap === null)
    throw new CliError(
      "file-unreadable",
      `${arg} is neither a path nor in the Hugging Face cache (${cache}); download it with \`poot pull ${arg}\``,
      { command, file: arg },
    );
  const model = modelInFolder(snap);
  if (model === null)
    throw new CliError(
      "bad-input",
      `${arg} (${snap}) has no config.json and not exactly one .gguf file; pass the file's path`,
      { command, file: snap },
    );
  return model;
}

/** A cached model for `poot list`. */
export interface CachedModel {
  /** `org/name`. */
  readonly repoId: string;
  /** Branches and tags with the commit each points to. */
  readonly refs: Readonly<Record<string, string>>;
  /** Commits with a snapshot. */
  readonly snapshots: readonly string[];
  /** Bytes of its blobs (each file counted once however many snapshots link it). */
  readonly bytes: number;
  /** Complete files in its blobs folder. */
  readonly files: number;
}

/** Every model in the cache, sorted by id. */
export function listCache(cache: string): CachedModel[] {
  if (!fs.existsSync(cache)) return [];
  const out: CachedModel[] = [];
  for (const entry of fs.readdirSync(cache).sort()) {
    if (!entry.startsWith("models--")) continue;
    const dir = path.join(cache, entry);
    const repoId = entry.slice("models--".length).split("--").join("/");
    const refs: Record<string, string> = {};
    const refsDir = path.join(dir, "refs");
    if (fs.existsSync(refsDir))
      for (const r of fs.readdirSync(refsDir)) refs[r] = fs.readFileSync(path.join(refsDir, r), "utf8").trim();
    const snapsDir = path.join(dir, "snapshots");
    const snapshots = fs.existsSync(snapsDir) ? fs.readdirSync(snapsDir) : [];
    let bytes = 0;
    let files = 0;
    const blobs = path.join(dir, "blobs");
    if (fs.existsSync(blobs)) {
      for (const b of fs.readdirSync(blobs)) {
        if (b.endsWith(".incomplete")) continue;
        bytes += fs.statSync(path.join(blobs, b)).size;
        files++;
      }
    }
    out.push({ repoId, refs, snapshots, bytes, files });
  }
  return out;
}

/** `1.2 GB`-style size. */
export function formatBytes(n: number): string {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let i = 0;
  let v = n;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

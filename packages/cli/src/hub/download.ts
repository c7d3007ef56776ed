// `poot pull`: downloads a Hugging Face repo revision into the hub cache in huggingface_hub's layout (cache.ts):
// the revision's file list from the Hub API, each file into blobs/<etag>.incomplete (resumed with a Range
// request after a dropped connection or an earlier interrupted run), verified against its etag (the LFS sha256,
// or the git blob sha1 of small files), renamed into blobs/ and linked from snapshots/<commit>/.
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { CliError } from "../errors.js";
import { repoFolder } from "./cache.js";

/** Options of {@link pullRepo}. */
export interface PullOptions {
  /** The Hub's base URL (`https://huggingface.co`, or HF_ENDPOINT). */
  readonly endpoint: string;
  /** `org/name`. */
  readonly repoId: string;
  /** Branch, tag or commit; default `main`. */
  readonly revision?: string;
  /** Glob patterns of the files to fetch (`*.gguf`, `**\/*.json`); default every file. */
  readonly include?: readonly string[];
  /** A Hub access token (sent as `Authorization: Bearer`). */
  readonly token?: string;
  /** The hub cache folder. */
  readonly cache: string;
  /** Called as bytes arrive. */
  readonly onProgress?: (file: string, done: number, total: number) => void;
  /** Attempts per file before giving up on a connection that keeps dropping; default 5. */
  readonly attempts?: number;
}

/** What {@link pullRepo} did. */
export interface PullResult {
  /** The commit the revision resolved to. */
  readonly commit: string;
  /** The snapshot folder. */
  readonly snapshot: string;
  /** The files of the snapshot it fetched or found cached. */
  readonly files: readonly { readonly path: string; readonly bytes: number; readonly downloaded: boolean }[];
}

interface Sibling {
  readonly rfilename: string;
  readonly size?: number;
  readonly blobId?: string;
  readonly lfs?: { readonly sha256: string; readonly size: number };
}

/** A glob (`*` within a path segment, `**` across them, `?` one character) as a RegExp over the whole path. */
export function globToRegExp(glob: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*" && glob[i + 1] === "*") {
      re += ".*";
      i++;
      if (glob[i + 1] === "/") i++;
    } else if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

function httpError(status: number, what: string, o: PullOptions): CliError {
  const revision = o.revision ?? "main";
  if (status === 401 || status === 403) {
    const how =
      o.token === undefined
        ? "set HF_TOKEN to a token with access"
        : "HF_TOKEN was sent and refused: check the token and that you accepted the repo's terms";
    return new CliError("command-failed", `${what}: HTTP ${status} (${o.repoId} is gated or private); ${how}`, {
      command: "pull",
    });
  }
  if (status === 404)
    return new CliError(
      "command-failed",
      `${what}: HTTP 404: no repo ${o.repoId} at revision ${revision} on ${o.endpoint} (check the name and --revision)`,
      { command: "pull" },
    );
  return new CliError("command-failed", `${what}: HTTP ${status} from ${o.endpoint}; try again later`, {
    command: "pull",
  });
}

async function get(url: string, o: PullOptions, headers: Record<string, string> = {}): Promise<Response> {
  try {
    return await fetch(url, {
      headers: { ...headers, ...(o.token === undefined ? {} : { authorization: `Bearer ${o.token}` }) },
    });
  } catch (err) {
    const cause = (err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message;
    throw new CliError("command-failed", `cannot reach ${o.endpoint} (${cause}); check the network or HF_ENDPOINT`, {
      command: "pull",
    });
  }
}

/** The etag-named digest of a finished file: sha256 for LFS files, git's blob sha1 otherwise. */
function digest(file: string, lfs: boolean): string {
  const h = createHash(lfs ? "sha256" : "sha1");
  if (!lfs) h.update(`blob ${fs.statSync(file).size}\0`);
  const fd = fs.openSync(file, "r");
  const buf = Buffer.allocUnsafe(1 << 20);
  try {
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      h.update(buf.subarray(0, n));
    }
  } finally {
    fs.closeSync(fd);
  }
  return h.digest("hex");
}

/** Downloads one file into `blob`, resuming `blob.incomplete`; verifies it against `etag`. */
async function fetchBlob(
  o: PullOptions,
  url: string,
  name: string,
  blob: string,
  etag: string,
  lfs: boolean,
  size: number,
): Promise<void> {
  const partial = `${blob}.incomplete`;
  const attempts = o.attempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    const have = fs.existsSync(partial) ? fs.statSync(partial).size : 0;
    if (have === size && size > 0) break;
    const res = await get(url, o, have > 0 ? { range: `bytes=${have}-` } : {});
    if (!res.ok) throw httpError(res.status, `cannot download ${name}`, o);
    // 206: the server resumed at `have`; 200: it sends the whole file again.
    const out = fs.createWriteStream(partial, { flags: res.status === 206 ? "a" : "w" });
    let done = res.status === 206 ? have : 0;
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        if (!out.write(chunk)) await new Promise<void>((r) => out.once("drain", () => r()));
        done += chunk.length;
        o.onProgress?.(name, done, size);
      }
      await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
      break;
    } catch (err) {
      await new Promise<void>((resolve) => out.end(() => resolve()));
      if (attempt >= attempts)
        throw new CliError(
          "command-failed",
          `downloading ${name}: the connection dropped ${attempts} times (${(err as Error).message}); run \`poot pull\` again to resume`,
          { command: "pull" },
        );
    }
  }
  const got = digest(partial, lfs);
  if (got !== etag) {
    fs.rmSync(partial, { force: true });
    throw new CliError(
      "command-failed",
      `${name} is corrupted: its ${lfs ? "sha256" : "git sha1"} is ${got}, the Hub says ${etag}; the partial file was removed, run \`poot pull\` again`,
      { command: "pull" },
    );
  }
  fs.renameSync(partial, blob);
}

/** Downloads `repoId` at `revision` (the files matching `include`) into the cache; returns what it did. */
export async function pullRepo(o: PullOptions): Promise<PullResult> {
  const revision = o.revision ?? "main";
  const endpoint = o.endpoint.replace(/\/+$/, "");
  const infoRes = await get(
    `${endpoint}/api/models/${o.repoId}/revision/${encodeURIComponent(revision)}?blobs=true`,
    o,
  );
  if (!infoRes.ok) throw httpError(infoRes.status, `cannot list ${o.repoId}`, o);
  const info = (await infoRes.json()) as { sha?: string; siblings?: Sibling[] };
  if (typeof info.sha !== "string" || !Array.isArray(info.siblings))
    throw new CliError(
      "command-failed",
      `${endpoint} answered the repo listing of ${o.repoId} without a commit or file list`,
      { command: "pull" },
    );
  const commit = info.sha;
  const include = (o.include ?? []).map(globToRegExp);
  const wanted = info.siblings.filter((s) => include.length === 0 || include.some((re) => re.test(s.rfilename)));
  if (wanted.length === 0)
    throw new CliError("bad-input", `no file of ${o.repoId} matches --include ${(o.include ?? []).join(" ")}`, {
      command: "pull",
    });
  const repo = repoFolder(o.cache, o.repoId);
  const snapshot = path.join(repo, "snapshots", commit);
  fs.mkdirSync(path.join(repo, "blobs"), { recursive: true });
  const files: { path: string; bytes: number; downloaded: boolean }[] = [];
  for (const s of wanted) {
    if (s.rfilename.split("/").some((part) => part === ".." || part === "") || path.isAbsolute(s.rfilename))
      throw new CliError("bad-input", `the Hub listed an unsafe file name ${JSON.stringify(s.rfilename)}`, {
        command: "pull",
      });
    const lfs = s.lfs !== undefined;
    const etag = s.lfs?.sha256 ?? s.blobId;
    const size = s.lfs?.size ?? s.size ?? 0;
    if (etag === undefined)
      throw new CliError("command-failed", `${endpoint} listed ${s.rfilename} without a blob id; cannot verify it`, {
        command: "pull",
      });
    const blob = path.join(repo, "blobs", etag);
    const downloaded = !fs.existsSync(blob);
    if (downloaded) {
      const url = `${endpoint}/${o.repoId}/resolve/${commit}/${s.rfilename.split("/").map(encodeURIComponent).join("/")}`;
      await fetchBlob(o, url, s.rfilename, blob, etag, lfs, size);
    }
    const link = path.join(snapshot, s.rfilename);
    fs.mkdirSync(path.dirname(link), { recursive: true });
    fs.rmSync(link, { force: true });
    fs.symlinkSync(path.relative(path.dirname(link), blob), link);
    files.push({ path: s.rfilename, bytes: fs.statSync(blob).size, downloaded });
  }
  if (revision !== commit) {
    const ref = path.join(repo, "refs", revision);
    fs.mkdirSync(path.dirname(ref), { recursive: true });
    fs.writeFileSync(ref, commit);
  }
  return { commit, snapshot, files };
}

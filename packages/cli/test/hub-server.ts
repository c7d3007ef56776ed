// A small stand-in for the Hugging Face Hub on 127.0.0.1, in the Hub's URL layout, serving the repo's demo model:
//   GET /api/models/<org>/<name>/revision/<rev>?blobs=true  -> { sha, siblings: [{ rfilename, size, blobId, lfs? }] }
//   GET /<org>/<name>/resolve/<commit>/<path>               -> the file (Range requests answered with 206)
// Repos: `poot/demo` (the first download of model.safetensors drops the connection after 1 MiB, to test
// resume), `poot/private` (401 without `Bearer secret`), `poot/corrupt` (tokenizer.json served with one byte
// changed); anything else is 404. The etags are computed here the way the Hub does (git blob sha1, LFS sha256).
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";

/** The demo model's files the fake repos hold (model.safetensors is an LFS file). */
export const REPO_FILES = [
  "config.json",
  "generation_config.json",
  "tokenizer.json",
  "tokenizer_config.json",
  "model.safetensors",
];
/** The commit every fake repo's `main` points to. */
export const COMMIT = "0123456789abcdef0123456789abcdef01234567";

/** A running fake Hub: its URL, request log and how to stop it. */
export interface HubServer {
  readonly url: string;
  /** Requests seen, as `METHOD path [range]`. */
  readonly log: string[];
  close(): Promise<void>;
}

const sha = (alg: string, ...parts: (string | Buffer)[]) => {
  const h = createHash(alg);
  for (const p of parts) h.update(p);
  return h.digest("hex");
};

/** Starts the fake Hub over the files of `modelDir`. */
export async function startHubServer(modelDir: string): Promise<HubServer> {
  const files = new Map(REPO_FILES.map((f) => [f, fs.readFileSync(path.join(modelDir, f))]));
  const siblings = REPO_FILES.map((f) => {
    const data = files.get(f)!;
    const blobId = sha("sha1", `blob ${data.length}\0`, data);
    return f.endsWith(".safetensors")
      ? { rfilename: f, size: data.length, blobId, lfs: { sha256: sha("sha256", data), size: data.length } }
      : { rfilename: f, size: data.length, blobId };
  });
  const log: string[] = [];
  let dropped = false;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    log.push(`${req.method} ${url.pathname}${req.headers.range ? ` ${req.headers.range}` : ""}`);
    const api = /^\/api\/models\/([^/]+\/[^/]+)\/revision\/([^/]+)$/.exec(url.pathname);
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
    const repo = api?.[1] ?? resolve?.[1];
    if (repo === "poot/private" && req.headers.authorization !== "Bearer secret") {
      res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: "Invalid credentials" }));
      return;
    }
    if (repo === undefined || !["poot/demo", "poot/private", "poot/corrupt"].includes(repo)) {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "Repository not found" }));
      return;
    }
    if (api !== null) {
      if (api[2] !== "main" && api[2] !== COMMIT)
        return void res.writeHead(404).end(JSON.stringify({ error: "Invalid rev id" }));
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ id: repo, sha: COMMIT, siblings }));
      return;
    }
    const name = decodeURIComponent(resolve![3]!);
    const data0 = files.get(name);
    if (data0 === undefined || resolve![2] !== COMMIT) return void res.writeHead(404).end("Entry not found");
    let data = data0;
    if (repo === "poot/corrupt" && name === "tokenizer.json") {
      data = Buffer.from(data0);
      data[100] = data[100]! ^ 1;
    }
    const sib = siblings.find((s) => s.rfilename === name)!;
    const headers = { etag: `"${sib.lfs?.sha256 ?? sib.blobId}"`, "x-repo-commit": COMMIT, "accept-ranges": "bytes" };
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? "");
    const start = range === null ? 0 : Number(range[1]);
    res.writeHead(range === null ? 200 : 206, {
      ...headers,
      "content-length": String(data.length - start),
      ...(range === null ? {} : { "content-range": `bytes ${start}-${data.length - 1}/${data.length}` }),
    });
    if (repo === "poot/demo" && name === "model.safetensors" && !dropped) {
      // The first download drops mid-file: the client must resume with a Range request.
      dropped = true;
      res.write(data.subarray(start, start + (1 << 20)), () => res.socket?.destroy());
      return;
    }
    res.end(data.subarray(start));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, log, close: () => new Promise<void>((r) => server.close(() => r())) };
}

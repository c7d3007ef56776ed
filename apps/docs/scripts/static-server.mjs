// Serves the built site (dist/) the way the playground needs it: cross-origin isolated (COOP/COEP), so the CPU
// backend's shared WebAssembly.Memory exists. Used by the site test and the screenshot script.
import { createReadStream, existsSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

/** The built site. */
export const DIST = fileURLToPath(new URL("../dist/", import.meta.url));

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript",
  ".css": "text/css",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".txt": "text/plain; charset=utf-8",
  ".woff2": "font/woff2",
  ".ico": "image/x-icon",
  ".xml": "application/xml",
};

/** Starts a server over `root` on a free port of 127.0.0.1; resolves to its origin and a close function. */
export async function serveDist(root = DIST) {
  if (!existsSync(join(root, "index.html")))
    throw new Error(`${root} has no index.html: run \`pnpm --filter docs build\` first`);
  const server = createServer((req, res) => {
    const url = decodeURIComponent((req.url ?? "/").replace(/[?#].*$/, ""));
    let file = normalize(join(root, url));
    if (!file.startsWith(root)) return void res.writeHead(403).end();
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, "index.html");
    if (!existsSync(file)) return void res.writeHead(404, { "content-type": "text/plain" }).end(`not found: ${url}`);
    res.writeHead(200, {
      "content-type": TYPES[extname(file)] ?? "application/octet-stream",
      "cross-origin-opener-policy": "same-origin",
      "cross-origin-embedder-policy": "require-corp",
      "cross-origin-resource-policy": "same-origin",
    });
    createReadStream(file).pipe(res);
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address();
  return { origin: `http://127.0.0.1:${port}`, close: () => new Promise((ok) => server.close(ok)) };
}

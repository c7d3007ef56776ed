// The backend in a real browser: the package bundled for the web, served by a local static server, loaded
// by headless Chromium (playwright-core); the page runs a kernel on navigator.gpu or reports why it cannot.

import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lowerWgsl } from "@poot/codegen";
import { synthesizeElementwise } from "@poot/kernelgen";
import { rand, relErr } from "./helpers.js";

const CHROMIUM = "/usr/bin/chromium";
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const N = 50;

// A kernel valid on any WebGPU device (no f16, no subgroups, 8 storage buffers): y = tanh(x) · 2 + 1.
const synth = synthesizeElementwise(
  {
    name: "browser_ew",
    shape: [N],
    inputs: [{ name: "x", dtype: "f32", shape: [N] }],
    nodes: [
      { op: "leaf", name: "x" },
      { op: "unary", fn: "tanh", a: 0 },
      { op: "const", value: 2, type: "f32" },
      { op: "binary", fn: "mul", a: 1, b: 2 },
      { op: "const", value: 1, type: "f32" },
      { op: "binary", fn: "add", a: 3, b: 4 },
    ],
    outputs: [{ name: "y", dtype: "f32", node: 5 }],
  },
  { maxWorkgroup: 256, sharedBytes: 16384 },
);
const code = lowerWgsl(synth.kernel, {
  maxWorkgroup: 256,
  subgroupSize: undefined,
  sharedBytes: 16384,
  dtypes: ["f32", "u32", "i32"],
  maxStorageBuffers: 8,
  f16: false,
  bf16: false,
});
const x = rand(21, N, -2, 2);

const PAGE = `<!doctype html><meta charset="utf-8"><title>poot backend-wgpu</title>
<script type="module">
import { openWgpu, runKernel } from "/backend.js";
const c = await (await fetch("/case.json")).json();
try {
  const ctx = await openWgpu(navigator.gpu);
  const buffers = { x: new Float32Array(c.x), y: new Float32Array(c.n) };
  await runKernel(ctx, { kernel: c.kernel, code: c.code, grid: c.grid, buffers });
  window.result = { webgpu: true, adapter: ctx.caps.adapter, y: Array.from(buffers.y) };
  ctx.dispose();
} catch (e) {
  window.result = { webgpu: false, name: e.name, code: e.code, message: String(e.message) };
}
</script>`;

interface PageResult {
  readonly webgpu: boolean;
  readonly adapter?: string;
  readonly y?: number[];
  readonly name?: string;
  readonly code?: string;
  readonly message?: string;
}

let server: Server | undefined;
let url = "";
let why = "";
beforeAll(async () => {
  const { existsSync } = await import("node:fs");
  if (!existsSync(CHROMIUM)) {
    why = `no Chromium at ${CHROMIUM}`;
    return;
  }
  // The package's own entry, bundled for browsers (no Node module may leak into it), with the test's kernel harness.
  const bundle = await build({
    stdin: {
      contents: 'export * from "@poot/backend-wgpu";\nexport { runKernel } from "./run-kernel.ts";',
      resolveDir: fileURLToPath(new URL(".", import.meta.url)),
      loader: "ts",
    },
    conditions: ["source"],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    logLevel: "silent",
  });
  const files: Record<string, [string, string]> = {
    "/": ["text/html", PAGE],
    "/backend.js": ["text/javascript", bundle.outputFiles[0]!.text],
    "/case.json": [
      "application/json",
      JSON.stringify({ kernel: synth.kernel, code, grid: synth.grid, x: Array.from(x), n: N }),
    ],
  };
  server = createServer((req, res) => {
    const f = files[req.url ?? ""];
    if (f === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": f[0] }).end(f[1]);
  });
  await new Promise<void>((ok) => server!.listen(0, "127.0.0.1", ok));
  const addr = server.address();
  url = `http://127.0.0.1:${typeof addr === "object" && addr !== null ? addr.port : 0}/`;
});
afterAll(() => server?.close());

/** Loads the page in headless Chromium (empty profile) with the standard flags plus `extra`. */
async function loadPage(extra: readonly string[]): Promise<{ result: PageResult; errors: string[] }> {
  const { chromium } = await import("playwright-core");
  const profile = await mkdtemp(join(tmpdir(), "poot-chromium-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...FLAGS, ...extra],
  });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(url);
    await page.waitForFunction(() => (window as unknown as { result?: unknown }).result !== undefined, undefined, {
      timeout: 60_000,
    });
    return {
      result: (await page.evaluate(() => (window as unknown as { result: unknown }).result)) as PageResult,
      errors,
    };
  } finally {
    await browser.close();
    await rm(profile, { recursive: true, force: true });
  }
}

const want = Array.from(x, (v) => Math.tanh(v) * 2 + 1);

describe("backend-wgpu in headless Chromium", () => {
  it("with the standard flags: runs the kernel on navigator.gpu, or the page gets a typed no-WebGPU error", async (t) => {
    if (why !== "") return t.skip(why);
    const { result: r, errors } = await loadPage([]);
    expect(errors).toEqual([]);
    if (r.webgpu) {
      expect(relErr(r.y!, want)).toBeLessThan(1e-5);
      return;
    }
    // No WebGPU here (headless Chromium with --disable-gpu): the page got the package's typed error.
    expect(r.name).toBe("WgpuError");
    expect(["no-webgpu", "no-adapter"]).toContain(r.code);
    t.annotate(`headless Chromium offers no WebGPU (${r.code}: ${r.message})`);
    // The fallback (a fixture model on @poot/backend-cpu's Wasm kernels in the same browser) needs models and the
    // runtime, which a backend may not import: packages/serve/test/browser.test.ts runs it (decision 0703).
    t.skip(
      `Chromium offers no WebGPU (${r.code}); the CPU fallback with a fixture model runs in packages/serve/test/browser.test.ts`,
    );
  });

  it("with SwiftShader's WebGPU adapter enabled: the same page runs the kernel in the browser, equal to float64", async (t) => {
    if (why !== "") return t.skip(why);
    const { result: r, errors } = await loadPage([
      "--enable-unsafe-webgpu",
      "--enable-unsafe-swiftshader",
      "--use-webgpu-adapter=swiftshader",
    ]);
    expect(errors).toEqual([]);
    if (!r.webgpu) return t.skip(`this Chromium has no SwiftShader WebGPU adapter either (${r.code}: ${r.message})`);
    t.annotate(`ran on ${r.adapter}`);
    expect(relErr(r.y!, want)).toBeLessThan(1e-5);
  });
});

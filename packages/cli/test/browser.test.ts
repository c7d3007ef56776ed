// The fixture model in a real browser: headless Chromium (playwright-core) loads a page that runs fixtures/hf
// llama3 with backend-wgpu where the browser offers WebGPU and, where it does not, says so and runs the CPU backend's
// Wasm kernels in Web Workers (decision 0703). Logits rows and greedy ids are checked here, in Node, against the reference.
import * as fs from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { openSafetensors } from "@poot/models";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundlePage } from "./browser/bundle.js";
import { fixture, needFixture, relErr } from "@poot/testkit";

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
const SWIFTSHADER_WEBGPU = [
  "--enable-unsafe-webgpu",
  "--enable-unsafe-swiftshader",
  "--use-webgpu-adapter=swiftshader",
];

const NO_FIXTURES = needFixture("hf/llama3");
const FIX = fixture("hf/llama3");

interface Row {
  readonly position: number;
  readonly logits: number[];
}
interface PageResult {
  readonly webgpu: { available: boolean; code?: string; message?: string; adapter?: string };
  readonly isolated: boolean;
  /** What `createCpuExecutor` of @poot/backend-cpu/browser did on the page's main thread. */
  readonly mainThread: "accepted" | { name: string; code?: string; message: string };
  readonly run:
    | { ok: { backend: "cpu" | "wgpu"; device: string; rows: Row[]; ids: number[] } }
    | { error: { name: string; code?: string; message: string; stack?: string } };
}

let server: Server | undefined;
let url = "";
let why = "";
beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM)) return void (why = `no Chromium at ${CHROMIUM}`);
  if (NO_FIXTURES !== undefined) return void (why = NO_FIXTURES);
  const { page, worker, thread } = await bundlePage();
  const files: Record<string, [string, string | Buffer]> = {
    "/": [
      "text/html",
      `<!doctype html><meta charset="utf-8"><title>poot in the browser</title><script type="module" src="/page.js"></script>`,
    ],
    "/page.js": ["text/javascript", page],
    "/cpu-worker.js": ["text/javascript", worker],
    "/worker-browser.js": ["text/javascript", thread],
    ...Object.fromEntries(
      ["config.json", "model.safetensors", "reference.json"].map((f) => [
        `/fixture/${f}`,
        ["application/octet-stream", fs.readFileSync(path.join(FIX, f))],
      ]),
    ),
  };
  server = createServer((req, res) => {
    const f = files[(req.url ?? "").replace(/\?.*$/, "")];
    if (f === undefined) return void res.writeHead(404).end();
    // Cross-origin isolation: shared WebAssembly.Memory (SharedArrayBuffer) exists only on isolated pages.
    res
      .writeHead(200, {
        "content-type": f[0],
        "cross-origin-opener-policy": "same-origin",
        "cross-origin-embedder-policy": "require-corp",
        "cross-origin-resource-policy": "same-origin",
      })
      .end(f[1]);
  });
  await new Promise<void>((ok) => server!.listen(0, "127.0.0.1", ok));
  const addr = server.address();
  url = `http://127.0.0.1:${typeof addr === "object" && addr !== null ? addr.port : 0}/`;
}, 120_000);
afterAll(() => server?.close());

/** Loads the page in headless Chromium (empty profile) with the standard flags plus `extra`. */
async function loadPage(extra: readonly string[], query = ""): Promise<{ result: PageResult; errors: string[] }> {
  const { chromium } = await import("playwright-core");
  const profile = await mkdtemp(path.join(tmpdir(), "poot-chromium-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...FLAGS, ...extra],
  });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(url + query);
    await page.waitForFunction(() => (globalThis as { result?: unknown }).result !== undefined, undefined, {
      timeout: 240_000,
      polling: 250,
    });
    return {
      result: (await page.evaluate(() => (globalThis as unknown as { result: unknown }).result)) as PageResult,
      errors,
    };
  } finally {
    await browser.close();
    await rm(profile, { recursive: true, force: true });
  }
}

/** Every row the page computed within 1e-4 of transformers' float64 logits, and its greedy ids equal the reference's. */
function checkRun(r: PageResult): number {
  if ("error" in r.run)
    throw new Error(
      `the page's run failed: ${r.run.error.name} ${r.run.error.code ?? ""}: ${r.run.error.message}\n${r.run.error.stack ?? ""}`,
    );
  const ref = JSON.parse(fs.readFileSync(path.join(FIX, "reference.json"), "utf8")) as {
    prompt_ids: number[];
    greedy_ids: number[];
  };
  const full = openSafetensors(path.join(FIX, "reference.safetensors")).readF32Sync("full_logits");
  const V = full.length / (ref.prompt_ids.length + ref.greedy_ids.length);
  const run = r.run.ok;
  expect(run.rows.length).toBeGreaterThanOrEqual(ref.prompt_ids.length + ref.greedy_ids.length - 1);
  let worst = 0;
  for (const row of run.rows) {
    expect(row.logits.length).toBe(V);
    const e = relErr(row.logits, full.subarray(row.position * V, (row.position + 1) * V));
    expect(e, `${run.backend} position ${row.position}`).toBeLessThanOrEqual(1e-4);
    worst = Math.max(worst, e);
  }
  expect(run.ids).toEqual(ref.greedy_ids);
  return worst;
}

describe("the fixture model (hf llama3) in headless Chromium", () => {
  it("standard flags: no WebGPU, the page says so and runs the CPU backend's Wasm kernels in Web Workers, equal to the reference", async (t) => {
    if (why !== "") return t.skip(why);
    const { result: r, errors } = await loadPage([]);
    expect(errors).toEqual([]);
    expect(r.isolated, "the page is cross-origin isolated (COOP/COEP)").toBe(true);
    expect(r.mainThread).toMatchObject({ name: "CpuError", code: "unsupported-platform" });
    let cpu = r;
    if (r.webgpu.available) {
      // A Chromium that offers WebGPU even so: the page ran backend-wgpu; the CPU path is then asked for by name.
      t.annotate(
        `this Chromium offers WebGPU with the standard flags (${r.webgpu.adapter}); the CPU path runs with ?backend=cpu`,
      );
      checkRun(r);
      cpu = (await loadPage([], "?backend=cpu")).result;
    } else {
      // Headless Chromium with --disable-gpu offers no adapter: the page got backend-wgpu's typed error and fell back.
      expect(["no-webgpu", "no-adapter"]).toContain(r.webgpu.code);
      t.annotate(
        `no WebGPU in headless Chromium (${r.webgpu.code}: ${r.webgpu.message}); the page ran the CPU backend`,
      );
    }
    if ("ok" in cpu.run) expect(cpu.run.ok.backend).toBe("cpu");
    const worst = checkRun(cpu);
    t.annotate(
      `cpu in the browser (${"ok" in cpu.run ? cpu.run.ok.device : ""}): max rel err ${worst.toExponential(2)}`,
    );
  }, 300_000);

  it("SwiftShader's WebGPU adapter enabled: the same page runs the model on backend-wgpu, equal to the reference", async (t) => {
    if (why !== "") return t.skip(why);
    const { result: r, errors } = await loadPage(SWIFTSHADER_WEBGPU);
    expect(errors).toEqual([]);
    if (!r.webgpu.available)
      return t.skip(`this Chromium has no SwiftShader WebGPU adapter (${r.webgpu.code}: ${r.webgpu.message})`);
    if ("ok" in r.run) expect(r.run.ok.backend).toBe("wgpu");
    const worst = checkRun(r);
    t.annotate(`wgpu on ${r.webgpu.adapter}: max rel err ${worst.toExponential(2)}`);
  }, 300_000);
});

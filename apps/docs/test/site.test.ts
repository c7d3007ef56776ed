// The built site in headless Chromium (playwright-core, the system Chromium): every page loads with no console error
// and every internal link resolves; the explorer's toggle shows the dispatch counts `poot compile` prints; the
// playground generates, in the browser, the same greedy text as `poot generate` for the same prompt.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Tokenizer } from "@poot/models";
import { readBenchResults } from "@poot/testkit";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectedFigures, missingFigures } from "../scripts/gen/bench.mjs";
import { CHROMIUM, SWIFTSHADER_WEBGPU, openBrowser } from "../scripts/browser.mjs";
import { DIST, serveDist } from "../scripts/static-server.mjs";

const REPO = fileURLToPath(new URL("../../../", import.meta.url));
const POOT = join(REPO, "packages/cli/bin/poot.mjs");
/** `poot ARGS...` as a user runs it; stdout. */
const poot = (...args: string[]): string =>
  execFileSync(process.execPath, [POOT, ...args], { cwd: REPO, encoding: "utf8" });

let why = "";
let origin = "";
let closeServer: (() => Promise<void>) | undefined;
beforeAll(async () => {
  const missing = !existsSync(CHROMIUM)
    ? `no Chromium at ${CHROMIUM}`
    : !existsSync(join(DIST, "index.html"))
      ? `${DIST} is not built (pnpm --filter docs build)`
      : "";
  // In CI a missing prerequisite fails the suite instead of skipping it.
  if (missing !== "" && process.env["CI"] !== undefined) throw new Error(missing);
  if (missing !== "") return void (why = missing);
  const s = await serveDist();
  origin = s.origin;
  closeServer = s.close;
});
afterAll(() => closeServer?.());

/** Opens `path` in a fresh page that records console errors and uncaught exceptions. */
async function open(ctx: BrowserContext, path: string, base = origin): Promise<{ page: Page; errors: string[] }> {
  const page = await ctx.newPage();
  const errors: string[] = [];
  page.on("console", (m) => void (m.type() === "error" && errors.push(`console: ${m.text()}`)));
  page.on("pageerror", (e) => errors.push(`uncaught: ${e.message}`));
  page.on(
    "response",
    (r) => void (r.status() >= 400 && errors.push(`HTTP ${r.status()}: ${r.url().replace(base, "")}`)),
  );
  const r = await page.goto(base + path, { waitUntil: "load" });
  if (r === null || !r.ok()) errors.push(`HTTP ${r?.status() ?? "no response"} for ${path}`);
  return { page, errors };
}

/** Visits every page reachable from `/` of `base`; reports console errors, failed requests and dead file links. */
async function crawl(
  ctx: BrowserContext,
  base: string,
): Promise<{ pages: number; files: number; errors: string[]; broken: string[] }> {
  const seen = new Set<string>(),
    queue = ["/"],
    broken: string[] = [],
    errors: string[] = [];
  const checked = new Map<string, number>();
  while (queue.length > 0) {
    const path = queue.shift()!;
    if (seen.has(path)) continue;
    seen.add(path);
    const { page, errors: e } = await open(ctx, path, base);
    // The playground starts a download and workers; wait until it is ready so late errors surface too.
    if (path === "/playground/")
      await page.waitForFunction(
        () => document.getElementById("playground")?.dataset["state"] !== "loading",
        undefined,
        { timeout: 60_000 },
      );
    errors.push(...e.map((x) => `${path}: ${x}`));
    const hrefs = await page.$$eval("a[href]", (as) => as.map((a) => (a as HTMLAnchorElement).href));
    await page.close();
    for (const href of hrefs) {
      const u = new URL(href);
      if (u.origin !== base) continue;
      const target = u.pathname;
      // The typedoc reference is checked by typedoc's own strict validation; here only that its pages exist.
      if (target.startsWith("/generated/") || /\.[a-z0-9]+$/i.test(target)) {
        if (!checked.has(target)) checked.set(target, (await ctx.request.get(base + target)).status());
        if (checked.get(target) !== 200) broken.push(`${path} -> ${target} (${checked.get(target)})`);
        continue;
      }
      // A link to a missing page is reported by that page's load (its HTTP status).
      if (!seen.has(target)) queue.push(target);
    }
  }
  return { pages: seen.size, files: checked.size, errors, broken };
}

describe("the docs site, built, in headless Chromium", () => {
  it("every page loads without a console error, and every internal link resolves", async (t) => {
    if (why !== "") return t.skip(why);
    const { ctx, close } = await openBrowser();
    try {
      const r = await crawl(ctx, origin);
      t.annotate(`${r.pages} pages visited, ${r.files} files and API pages linked`);
      expect(r.errors).toEqual([]);
      expect(r.broken).toEqual([]);
      expect(r.pages).toBeGreaterThan(60);
    } finally {
      await close();
    }
  });

  it("planted: a page with a console error and a link to a missing page fails the crawl", async (t) => {
    if (why !== "") return t.skip(why);
    const dir = await mkdtemp(join(tmpdir(), "poot-docs-planted-"));
    await writeFile(
      join(dir, "index.html"),
      `<!doctype html><title>planted</title><a href="/missing/">x</a><a href="/generated/nope.txt">y</a><script>console.error("planted")</script>`,
    );
    const s = await serveDist(dir + "/");
    const { ctx, close } = await openBrowser();
    try {
      const r = await crawl(ctx, s.origin);
      expect(r.errors.some((e) => e.includes("planted"))).toBe(true);
      expect(r.errors.some((e) => e.includes("/missing/") && e.includes("404"))).toBe(true);
      expect(r.broken).toEqual(["/ -> /generated/nope.txt (404)"]);
    } finally {
      await close();
      await s.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("the benchmarks page shows every figure of every bench-results/*.json file, each as its median", async (t) => {
    if (why !== "") return t.skip(why);
    const expected = expectedFigures(readBenchResults(join(REPO, "bench-results"))) as { key: string; value: number }[];
    expect(expected.length).toBeGreaterThan(0);
    const { ctx, close } = await openBrowser();
    try {
      const { page, errors } = await open(ctx, "/benchmarks/");
      const shown = await page.$$eval("[data-figure]", (els) =>
        els.map(
          (e) => [e.getAttribute("data-figure")!, Number(e.getAttribute("data-value")), e.textContent ?? ""] as const,
        ),
      );
      const found = Object.fromEntries(shown.map(([k, v]) => [k, v]));
      expect(missingFigures(expected, found)).toEqual([]);
      // The text a reader sees is the median, rounded to two places (counts as they are).
      for (const [key, value, text] of shown)
        expect(Math.abs(Number.parseFloat(text) - value), `${key}: "${text}"`).toBeLessThanOrEqual(0.005 + 1e-9);
      expect(errors).toEqual([]);
      // Planted: a figure left off the page, and one that shows another number, are both reported.
      const [a, b] = expected;
      const planted = { ...found, [b!.key]: b!.value + 1 };
      delete planted[a!.key];
      expect(missingFigures(expected, planted)).toEqual([
        `${a!.key} = ${a!.value} (absent)`,
        `${b!.key} = ${b!.value} (page shows ${b!.value + 1})`,
      ]);
    } finally {
      await close();
    }
  });

  it("the explorer's toggle switches between the dispatch counts `poot compile` prints", async (t) => {
    if (why !== "") return t.skip(why);
    const { ctx, close } = await openBrowser();
    try {
      const { page, errors } = await open(ctx, "/explorer/");
      await page.waitForSelector("#explorer[data-ready='true']");
      for (const [id, path] of [
        ["demo", "models/demo"],
        ["llama-3.2-1b", "fixtures/configs/llama-3.2-1b.json"],
      ] as const) {
        for (const kind of ["wgpu", "cuda", "cpu"]) {
          // `poot compile MODEL --target KIND` prints "KIND: U -> F dispatches (...)".
          const line = poot("compile", path, "--target", kind);
          const m = /^\w+: (\d+) -> (\d+) dispatches/.exec(line);
          expect(m, line).not.toBeNull();
          await page.selectOption("#ex-model", id);
          await page.selectOption("#ex-backend", kind);
          const panel = `.ex-panel[data-model="${id}"][data-backend="${kind}"]`;
          await page.click("#ex-view-primitive");
          expect(await page.locator(`${panel} [data-testid=dispatches-primitive]`).innerText()).toBe(m![1]);
          await expect.poll(() => page.locator(`${panel} [data-testid=dispatches-fused]`).isVisible()).toBe(false);
          await page.click("#ex-view-fused");
          expect(await page.locator(`${panel} [data-testid=dispatches-fused]`).innerText()).toBe(m![2]);
          expect(await page.locator(`${panel} [data-testid=dispatches-primitive]`).isVisible()).toBe(false);
        }
      }
      // A fused group's kernel, per target, is the emitted text (WGSL entry point, PTX entry, SPIR-V, LLVM IR, Wasm).
      await page.selectOption("#ex-model", "demo");
      await page.selectOption("#ex-backend", "wgpu");
      await page.click('.ex-panel[data-model="demo"][data-backend="wgpu"] .ex-group >> nth=0');
      const marks: Record<string, RegExp> = {
        wgsl: /@compute/,
        ptx: /\.entry/,
        spirv: /OpEntryPoint GLCompute/,
        amdgpu: /amdgpu_kernel/,
        wasm: /\(module/,
      };
      for (const [target, mark] of Object.entries(marks)) {
        await page.click(`#ex-kernel .ex-tabs button[data-target=${target}]`);
        await page.waitForFunction(
          (tg) => document.getElementById("explorer")?.dataset["kernelLoaded"]?.startsWith(`${tg}:`),
          target,
        );
        expect(await page.locator("#ex-kernel-text").innerText(), target).toMatch(mark);
      }
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  const PROMPT = "The meaning of life is";
  const MAX = 24;
  for (const [label, flags] of [
    ["CPU fallback (no WebGPU adapter)", []],
    ["SwiftShader's WebGPU adapter present", SWIFTSHADER_WEBGPU],
  ] as const) {
    it(`the playground, ${label}: the same greedy text as \`poot generate\``, async (t) => {
      if (why !== "") return t.skip(why);
      const { ctx, close } = await openBrowser([...flags]);
      try {
        const { page, errors } = await open(ctx, "/playground/");
        await page.waitForFunction(
          () => document.getElementById("playground")?.dataset["state"] === "ready",
          undefined,
          { timeout: 60_000 },
        );
        await page.fill("#pg-prompt", PROMPT);
        await page.fill("#pg-max", String(MAX));
        await page.click("#pg-go");
        await page.waitForFunction(
          () => ["done", "error"].includes(document.getElementById("playground")?.dataset["state"] ?? ""),
          undefined,
          { timeout: 480_000, polling: 500 },
        );
        const status = await page.locator("#pg-status").innerText();
        const data = await page.evaluate(() => ({ ...document.getElementById("playground")!.dataset }));
        expect(data["state"], status).toBe("done");
        const pageIds = JSON.parse(data["ids"]!) as number[];
        const promptIds = JSON.parse(data["promptIds"]!) as number[];
        // The oracle: the CLI's tokenizer and its greedy generation on the float64 reference evaluator.
        expect(promptIds).toEqual(JSON.parse(poot("tokenize", "models/demo", "--text", PROMPT, "--add-special")));
        const ids = JSON.parse(
          poot("generate", "models/demo", "--ids", promptIds.join(","), "--max-tokens", String(MAX), "--greedy"),
        ) as number[];
        expect(pageIds).toEqual(ids);
        const text = Tokenizer.fromFolder(join(REPO, "models/demo")).decode(ids, { skipSpecial: true });
        expect(await page.locator("#pg-out").innerText()).toBe(text);
        expect(await page.locator("#pg-speed").innerText()).toMatch(/decode \d+(\.\d+)? tok\/s/);
        const webgpu = await page.locator("#pg-webgpu").innerText();
        // With an adapter the page runs backend-wgpu; without one (standard headless flags) the CPU backend.
        const hasAdapter = webgpu.startsWith("WebGPU adapter");
        expect(await page.locator("#pg-backend").innerText()).toMatch(hasAdapter ? /^wgpu \(/ : /^cpu \(/);
        if (flags.length === 0)
          expect(hasAdapter, "headless Chromium with --disable-gpu offers no WebGPU adapter").toBe(false);
        if (flags.length > 0 && !hasAdapter) t.annotate(`this Chromium offers no SwiftShader adapter: ${webgpu}`);
        t.annotate(`${label}: "${text}" — ${await page.locator("#pg-speed").innerText()}; ${webgpu}`);
        expect(errors).toEqual([]);
      } finally {
        await close();
      }
    });
  }
});

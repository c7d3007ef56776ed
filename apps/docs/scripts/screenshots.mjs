// `pnpm --filter docs screenshots`: the home page, the fusion explorer (fused view, a kernel open) and the playground
// after a generation, taken by headless Chromium over the built site into screenshots/ (committed).
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { openBrowser } from "./browser.mjs";
import { serveDist } from "./static-server.mjs";

const OUT = fileURLToPath(new URL("../screenshots/", import.meta.url));
mkdirSync(OUT, { recursive: true });
const server = await serveDist();
const { ctx, close } = await openBrowser([], { width: 1280, height: 900 });
try {
  const page = await ctx.newPage();
  const shot = async (name) => {
    await page.screenshot({ path: `${OUT}${name}.png`, fullPage: false });
    console.log(`screenshots/${name}.png`);
  };

  await page.goto(`${server.origin}/`);
  await shot("home");

  await page.goto(`${server.origin}/explorer/`);
  await page.waitForSelector("#explorer[data-ready='true']");
  await page.click("#ex-view-fused");
  await page.click('.ex-panel[data-model="demo"][data-backend="wgpu"] .ex-group >> nth=2');
  await page.waitForFunction(() => document.getElementById("explorer")?.dataset["kernelLoaded"] !== undefined);
  await page.locator("#explorer").scrollIntoViewIfNeeded();
  await shot("explorer");

  await page.goto(`${server.origin}/playground/`);
  await page.waitForFunction(() => document.getElementById("playground")?.dataset["state"] === "ready", undefined, {
    timeout: 60_000,
  });
  await page.fill("#pg-prompt", "The meaning of life is");
  await page.click("#pg-go");
  await page.waitForFunction(
    () => ["done", "error"].includes(document.getElementById("playground")?.dataset["state"] ?? ""),
    undefined,
    { timeout: 480_000, polling: 500 },
  );
  await shot("playground");
} finally {
  await close();
  await server.close();
}

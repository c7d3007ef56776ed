// Headless Chromium through playwright-core with the flags the repository's browser tests use (decision 0703).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

/** The system Chromium. */
export const CHROMIUM = "/usr/bin/chromium";
/** Standard flags: no GPU (so no WebGPU adapter), no network chatter. */
export const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
/** SwiftShader's WebGPU adapter on top of the standard flags. */
export const SWIFTSHADER_WEBGPU = [
  "--enable-unsafe-webgpu",
  "--enable-unsafe-swiftshader",
  "--use-webgpu-adapter=swiftshader",
];

/** A browser context with an empty profile; `close()` removes the profile. */
export async function openBrowser(extra = [], viewport = { width: 1280, height: 900 }) {
  const profile = await mkdtemp(join(tmpdir(), "poot-docs-chromium-"));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...FLAGS, ...extra],
    viewport,
  });
  return {
    ctx,
    close: async () => {
      await ctx.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

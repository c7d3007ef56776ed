#!/usr/bin/env node
// The typecheck half of `pnpm lint`: `tsc -b` over the root solution (project references, emits d.ts),
// then every tsconfig.test.json (src + tests, noEmit), which `tsc -b` cannot reach since tests are not composite.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");

/** Runs tsc with `args` in the repo root; returns true when it passed. */
function run(label, args) {
  const started = Date.now();
  const res = spawnSync(process.execPath, [tsc, ...args], { cwd: repo, stdio: "inherit" });
  const ok = res.status === 0;
  console.log(`typecheck ${ok ? "ok  " : "FAIL"} ${label} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  return ok;
}

const testConfigs = ["packages", "apps"]
  .flatMap((dir) => (existsSync(join(repo, dir)) ? readdirSync(join(repo, dir)).map((d) => `${dir}/${d}`) : []))
  .concat(["scripts"])
  .map((folder) => `${folder}/tsconfig.test.json`)
  .filter((file) => existsSync(join(repo, file)));

let ok = run("tsc -b (tsconfig.json)", ["-b", "tsconfig.json"]);
for (const file of testConfigs) ok = run(file, ["-p", file, "--noEmit"]) && ok;
if (!ok) {
  console.error("typecheck: FAILED");
  process.exit(1);
}
